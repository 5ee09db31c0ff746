import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { DIRECT_TEST_SETTINGS, eventsOf, messageOf, sendDirect, startDirectRig, type DirectRig } from './helpers/direct-delivery.js';
import { statusesOf } from './helpers/emails.js';
import type { MxReceiver } from './helpers/mx-receivers.js';
import { expectOk } from './helpers/server.js';
import { sleep, waitFor } from './helpers/wait.js';

/**
 * Direct delivery's limits per destination, against real parts on loopback (the rig of
 * helpers/direct-delivery.ts, with receivers of their own for the providers here): back-off when a
 * destination asks to slow down or does not answer, the end of the retry window, messages per
 * connection, the rate per minute, RFC 5321's timeouts past the greeting, and every address of a
 * host. The server's clock (deps.clock, which direct delivery goes by too) stands still unless a
 * test moves it: pauses, rates and retries are read off it exactly, and nothing waits for them.
 */

const BACKOFF_MS = Number(DIRECT_TEST_SETTINGS.DIRECT_BACKOFF_MS);
const MINUTE = 60_000;

type Clock = { readonly now: number; set(at: number): void };

/** Stops the server's clock an hour ahead (mail made now is due at once), to move only by `set`. */
function stopClock(rig: DirectRig): Clock {
  let now = Date.now() + 3_600_000;
  rig.server.deps.clock = () => new Date(now);
  return {
    get now() {
      return now;
    },
    set(at) {
      now = at;
    },
  };
}

/** A provider of its own: `domain`'s one MX, `mx.<name>-mail.test` (the destination `<name>-mail.test`), at these addresses. */
function provider(rig: DirectRig, name: string, domain: string, addresses: string[]) {
  rig.dns.set(`mx.${name}-mail.test`, addresses.map((address) => ({ type: 'A' as const, address })));
  rig.dns.set(domain, [{ type: 'MX', exchange: `mx.${name}-mail.test`, priority: 10 }]);
}

const rowsOf = (rig: DirectRig, ids: string[]) =>
  rig.server.deps.db.selectFrom('emails').select(['id', 'send_at', 'attempts', 'claimed_by']).where('id', 'in', ids).orderBy('send_at').execute();

/**
 * Waits until the dispatcher is done with these emails for now: none claimed, none due by the
 * stopped clock; answers their rows (by send_at). Those still owed wait for a later time.
 */
const doneForNow = (rig: DirectRig, clock: Clock, ids: string[]) =>
  waitFor(
    'the emails handled and waiting for a later time',
    () => rowsOf(rig, ids),
    (rows) => rows.length === ids.length && rows.every((row) => row.claimed_by === null && (row.send_at === null || row.send_at.getTime() > clock.now)),
    20_000,
  );

/** Sends an email that its destination must keep untried: answers it, and until when it waits. */
async function heldBack(rig: DirectRig, clock: Clock, to: string): Promise<{ id: string; until: number }> {
  const id = await sendDirect(rig, { to });
  const [row] = await doneForNow(rig, clock, [id]);
  expect(row!.attempts, `${to}: postponed untried, not tried`).toBe(0);
  return { id, until: row!.send_at!.getTime() };
}

/** How long a destination paused now keeps an email sent to it untried. */
const pauseLeft = async (rig: DirectRig, clock: Clock, to: string) => (await heldBack(rig, clock, to)).until - clock.now;

/**
 * Holds the receiver's reply to each final dot until the test lets it go: `held` is how many
 * messages wait for their reply at once, i.e. how many connections the sender is using.
 */
function holdReplies(receiver: MxReceiver) {
  const waiting: Array<() => void> = [];
  let open = false;
  receiver.behaviour.replyWhen = () => (open ? Promise.resolve() : new Promise<void>((resolve) => waiting.push(resolve)));
  // A test that fails while replies are held lets them go, so that its rig stops at once.
  onTestFinished(() => {
    for (const release of waiting.splice(0)) release();
  });
  return {
    get held() {
      return waiting.length;
    },
    until: (what: string, n: number) => waitFor(what, async () => waiting.length, (held) => held === n, 20_000),
    releaseOne: () => waiting.shift()!(),
    open() {
      open = true;
      for (const release of waiting.splice(0)) release();
    },
    close() {
      open = false;
    },
  };
}

const METRICS_TOKEN = 'metrics-token-for-direct-limits';

/** Attempts waiting in the server for a connection to this destination, as /metrics tells (mailroom_direct_queue). */
async function directQueue(rig: DirectRig, destination: string): Promise<number> {
  const metrics = await (await fetch(`${rig.server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  return Number(new RegExp(`^mailroom_direct_queue\\{destination="${destination.replaceAll('.', '\\.')}"\\} (\\d+)$`, 'm').exec(metrics)?.[1] ?? 0);
}

const emailOf = (rig: DirectRig, id: string) => expectOk(rig.server, rig.key, 'GET', `/v1/emails/${id}`);

/** Waits until the dispatcher is done with this email for now (doneForNow); answers it, with its events. */
async function handled(rig: DirectRig, clock: Clock, id: string) {
  await doneForNow(rig, clock, [id]);
  return emailOf(rig, id);
}

/** Waits until the dispatcher is done with these emails for now, and expects every one DELIVERED. */
async function expectDelivered(rig: DirectRig, clock: Clock, ids: string[]) {
  await doneForNow(rig, clock, ids);
  const statuses = await Promise.all(ids.map(async (id) => (await emailOf(rig, id)).latestStatus));
  expect(statuses).toEqual(ids.map(() => 'DELIVERED'));
}

const sendEach = (rig: DirectRig, to: string[]) => Promise.all(to.map((address) => sendDirect(rig, { to: address })));
const names = (prefix: string, n: number, domain: string) => Array.from({ length: n }, (_, i) => `${prefix}${i}@${domain}`);

describe('direct delivery: a destination that asks to slow down, or does not answer', () => {
  const THROTTLE = '127.0.0.10';
  const DOUBLING = '127.0.0.11';
  const SLOW = '127.0.0.12';
  const DOWN = '127.0.0.13';
  const WINDOW = '127.0.0.14';
  let rig: DirectRig;
  let clock: Clock;
  beforeAll(async () => {
    // Four connections a destination at most; replies the test holds stay well within the scaled timeouts (15 s, 30 s after the message).
    rig = await startDirectRig({ DIRECT_MAX_CONNECTIONS: '4', DIRECT_TIMEOUT_SCALE: '0.05' }, { moreReceivers: [THROTTLE, DOUBLING, SLOW, DOWN, WINDOW] });
    clock = stopClock(rig);
    provider(rig, 'throttle', 'throttle.test', [THROTTLE]);
    provider(rig, 'doubling', 'doubling.test', [DOUBLING]);
    provider(rig, 'slowmail', 'slowmail.test', [SLOW]);
    provider(rig, 'slowrcpt', 'slowrcpt.test', [SLOW]);
    provider(rig, 'grey', 'grey.test', [SLOW]);
    provider(rig, 'down', 'down.test', [DOWN]);
    provider(rig, 'window', 'window.test', [WINDOW]);
  });
  afterAll(() => rig.stop());

  it('a destination that says slow down (421) gets half the connections, and one more back for each delivery', async () => {
    const receiver = rig.mx.byAddress(THROTTLE);
    const replies = holdReplies(receiver);
    // At first it gets all four.
    const first = await sendEach(rig, names('first', 6, 'throttle.test'));
    await replies.until('four messages under way at once', 4);
    replies.open();
    await expectDelivered(rig, clock, first);

    // A 421 to a recipient (the server closes that connection): half the connections, and a pause.
    receiver.behaviour.rcpt = (address) => (address === 'stop@throttle.test' ? { code: 421, message: '4.7.0 too many messages, slow down' } : null);
    const stop = await sendDirect(rig, { to: 'stop@throttle.test' });
    const delayed = await handled(rig, clock, stop);
    expect(statusesOf(delayed)).toEqual(['QUEUED', 'DELIVERY_DELAYED']);
    expect(eventsOf(delayed, 'DELIVERY_DELAYED')[0]!.data).toMatchObject({ response: '421 4.7.0 too many messages, slow down', code: 421 });
    receiver.behaviour.rcpt = undefined;
    replies.close();
    const paused = clock.now;
    const second = await sendEach(rig, names('second', 6, 'throttle.test'));
    const waiting = await doneForNow(rig, clock, second);
    expect(waiting.map((row) => [row.send_at!.getTime() - paused, row.attempts]), 'untried until the pause is over').toEqual(Array(6).fill([BACKOFF_MS, 0]));

    // The pause over, its mail (and the retry of the refused one) goes over two connections, no more.
    clock.set(paused + BACKOFF_MS);
    await replies.until('two messages under way at once', 2);
    await sleep(800);
    expect(replies.held, 'connections in use after the 421').toBe(2);

    // One delivery gives back one connection: three, not four.
    replies.releaseOne();
    await replies.until('the next message on the connection that delivered', 2);
    const third = await sendEach(rig, names('third', 2, 'throttle.test'));
    await replies.until('three messages under way at once', 3);
    await sleep(800);
    expect(replies.held, 'connections in use after one delivery').toBe(3);

    // Enough deliveries, and it has all four again.
    replies.open();
    await expectDelivered(rig, clock, [stop, ...second, ...third]);
    replies.close();
    const fourth = await sendEach(rig, names('fourth', 6, 'throttle.test'));
    await replies.until('four messages under way at once again', 4);
    replies.open();
    await expectDelivered(rig, clock, fourth);
    expect(messageOf(rig, stop)).toHaveLength(1);
  });

  it('each pause of a destination that keeps answering 421 is twice the last, up to thirty times the first; a delivery starts them over', async () => {
    const receiver = rig.mx.byAddress(DOUBLING);
    receiver.behaviour = { connect: () => ({ code: 421, message: '4.7.0 too many connections, slow down' }) };
    const probe = await sendDirect(rig, { to: 'probe@doubling.test' });
    expect(statusesOf(await handled(rig, clock, probe))).toEqual(['QUEUED', 'DELIVERY_DELAYED']);
    const ids = [probe];
    const pauses: number[] = [];
    for (let round = 0; round < 7; round++) {
      // Sent while paused: it waits untried until the pause is over.
      const since = clock.now;
      const witness = await heldBack(rig, clock, `w${round}@doubling.test`);
      ids.push(witness.id);
      pauses.push(witness.until - since);
      // The pause over, it (and whatever else is due) meets the 421 again.
      clock.set(witness.until);
      await doneForNow(rig, clock, ids);
    }
    expect(pauses.map((ms) => ms / BACKOFF_MS)).toEqual([1, 2, 4, 8, 16, 30, 30]);

    // It takes mail again: the last witness is due when this pause is over, and delivered.
    receiver.behaviour = {};
    clock.set(clock.now + 30 * BACKOFF_MS);
    await doneForNow(rig, clock, ids);
    expect((await emailOf(rig, ids.at(-1)!)).latestStatus).toBe('DELIVERED');
    // The next 421 (to a recipient, over the connection that delivered) pauses it for the first pause again.
    receiver.behaviour = { rcpt: () => ({ code: 421, message: '4.7.0 too many messages, slow down' }) };
    const again = await sendDirect(rig, { to: 'again@doubling.test' });
    expect(statusesOf(await handled(rig, clock, again))).toEqual(['QUEUED', 'DELIVERY_DELAYED']);
    expect(await pauseLeft(rig, clock, 'after@doubling.test')).toBe(BACKOFF_MS);
    receiver.behaviour = {};
  });

  it('a 4xx that asks to slow down, to MAIL FROM or to RCPT TO, pauses the destination as a 421 does; greylisting ("try again later") does not', async () => {
    const receiver = rig.mx.byAddress(SLOW);
    receiver.behaviour = { mail: () => ({ code: 450, message: '4.7.1 rate limit exceeded, slow down' }) };
    const refusedMail = await sendDirect(rig, { to: 'one@slowmail.test' });
    const byMail = await handled(rig, clock, refusedMail);
    expect(eventsOf(byMail, 'DELIVERY_DELAYED').map((event) => event.data.response)).toEqual(['450 4.7.1 rate limit exceeded, slow down']);
    expect(await pauseLeft(rig, clock, 'two@slowmail.test')).toBe(BACKOFF_MS);

    receiver.behaviour = {
      rcpt: (address, tries) => {
        if (address.endsWith('@slowrcpt.test')) return { code: 451, message: '4.7.0 too many messages from your address, try again later' };
        if (address === 'first@grey.test' && tries === 0) return { code: 451, message: '4.7.1 greylisted, try again later' };
        return null;
      },
    };
    const refusedRcpt = await sendDirect(rig, { to: 'one@slowrcpt.test' });
    const byRcpt = await handled(rig, clock, refusedRcpt);
    expect(eventsOf(byRcpt, 'DELIVERY_DELAYED').map((event) => event.data.response)).toEqual(['451 4.7.0 too many messages from your address, try again later']);
    expect(await pauseLeft(rig, clock, 'two@slowrcpt.test')).toBe(BACKOFF_MS);

    // Greylisted: only that email waits for its retry; the next one to the destination goes at once.
    const greylisted = await sendDirect(rig, { to: 'first@grey.test' });
    expect(statusesOf(await handled(rig, clock, greylisted))).toEqual(['QUEUED', 'DELIVERY_DELAYED']);
    const next = await sendDirect(rig, { to: 'second@grey.test' });
    expect(statusesOf(await handled(rig, clock, next))).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
    receiver.behaviour = {};
  });

  it('a destination none of whose servers answers three attempts in a row is paused, and its mail then waits untried', async () => {
    await rig.mx.byAddress(DOWN).stop();
    for (const to of ['one@down.test', 'two@down.test', 'three@down.test']) {
      const id = await sendDirect(rig, { to });
      const email = await handled(rig, clock, id);
      expect(statusesOf(email), `${to} tried`).toEqual(['QUEUED', 'DELIVERY_DELAYED']);
      expect(eventsOf(email, 'DELIVERY_DELAYED')[0]!.data.response).toMatch(/cannot reach/);
    }
    expect(await pauseLeft(rig, clock, 'four@down.test')).toBe(BACKOFF_MS);
    await rig.mx.byAddress(DOWN).start();
  });

  // Last here: it moves the clock a day on.
  it('mail a destination still defers when the retry window has passed is BOUNCED (Transient), once, not suppressed, and never tried again', async () => {
    const receiver = rig.mx.byAddress(WINDOW);
    let stuckTries = 0;
    receiver.behaviour = {
      rcpt: (address) => {
        if (address !== 'stuck@window.test') return null;
        stuckTries++;
        return { code: 451, message: '4.3.0 mailbox temporarily unavailable' };
      },
    };
    const id = await sendDirect(rig, { to: ['fine@window.test', 'stuck@window.test'] });
    expect(statusesOf(await handled(rig, clock, id))).toEqual(['QUEUED', 'SENT', 'DELIVERED', 'DELIVERY_DELAYED']);
    const { created_at: createdAt } = await rig.server.deps.db.selectFrom('emails').select('created_at').where('id', '=', id).executeTakeFirstOrThrow();
    // SEND_RETRY_WINDOW_HOURS (24) after it was sent.
    clock.set(createdAt.getTime() + 24 * 3_600_000 + MINUTE);
    const email = await handled(rig, clock, id);
    // Nothing left to send: no attempt comes after.
    const [row] = await rowsOf(rig, [id]);
    expect(row).toMatchObject({ send_at: null, attempts: 2 });
    expect(statusesOf(email)).toEqual(['QUEUED', 'SENT', 'DELIVERED', 'DELIVERY_DELAYED', 'BOUNCED']);
    expect(eventsOf(email, 'BOUNCED')[0]!.data).toMatchObject({
      bounceType: 'Transient', recipients: ['stuck@window.test'], response: '451 4.3.0 mailbox temporarily unavailable', code: 451, remoteMta: 'mx.window-mail.test',
    });
    expect(stuckTries).toBe(2);
    expect(messageOf(rig, id).map((m) => m.rcptTo)).toEqual([['fine@window.test']]);
    const suppressions = await expectOk(rig.server, rig.key, 'GET', '/v1/suppressions');
    expect(suppressions.data.map((s: { email: string }) => s.email)).not.toContain('stuck@window.test');
  });
});

describe('direct delivery: messages per connection, the rate per minute, and every address of a host', () => {
  const RATED = '127.0.0.10';
  const OVERRIDE = '127.0.0.11';
  const BATCHED = '127.0.0.12';
  const TWIN_1 = '127.0.0.13';
  const TWIN_2 = '127.0.0.14';
  let rig: DirectRig;
  let clock: Clock;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-limits-'));
    const policy = path.join(dir, 'policy.json');
    await writeFile(policy, JSON.stringify({
      // One connection, for as many messages as come: attempts queue for it, and go ahead on it only within the rate (DIRECT_RATE_PER_MINUTE).
      'rated-mail.test': { maxConnections: 1, messagesPerConnection: 100 },
      'override-mail.test': { perMinute: 3 },
      // One connection, so that every message goes over it while it may carry them.
      'batched-mail.test': { maxConnections: 1, perMinute: 1000 },
      'twin-mail.test': { perMinute: 1000 },
    }));
    // Timeouts long enough (1.5 s to connect, 15 s a reply) that no mail here is deferred by a busy machine: the clock stands still, so no retry would come.
    rig = await startDirectRig(
      { DIRECT_RATE_PER_MINUTE: '2', DIRECT_MESSAGES_PER_CONNECTION: '3', DELIVERY_POLICY_FILE: policy, DIRECT_TIMEOUT_SCALE: '0.05', METRICS_TOKEN },
      { moreReceivers: [RATED, OVERRIDE, BATCHED, TWIN_1, TWIN_2] },
    );
    clock = stopClock(rig);
    provider(rig, 'rated', 'rated.test', [RATED]);
    provider(rig, 'override', 'override.test', [OVERRIDE]);
    provider(rig, 'batched', 'batched.test', [BATCHED]);
    // One host, two addresses.
    provider(rig, 'twin', 'twin.test', [TWIN_1, TWIN_2]);
  });
  afterAll(async () => {
    await rig.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('a connection carries at most DIRECT_MESSAGES_PER_CONNECTION messages, then the next one opens', async () => {
    const receiver = rig.mx.byAddress(BATCHED);
    const ids = await sendEach(rig, names('m', 9, 'batched.test'));
    await expectDelivered(rig, clock, ids);
    const perConnection = new Map<string, number>();
    for (const message of receiver.received) perConnection.set(message.connection, (perConnection.get(message.connection) ?? 0) + 1);
    // Each connection took as many as it could carry, and no more.
    expect(Math.max(...perConnection.values())).toBe(3);
    expect(receiver.received).toHaveLength(9);
  });

  it('a destination gets at most DIRECT_RATE_PER_MINUTE new messages a minute: the rest wait untried for the next minute, minute after minute', async () => {
    const receiver = rig.mx.byAddress(RATED);
    const start = clock.now;
    // Its one connection busy with the first (its reply held), the other four queue behind it: each
    // may go over that connection, sent ahead (PIPELINING) or after, only while the rate allows.
    const replies = holdReplies(receiver);
    const ids = [await sendDirect(rig, { to: 'r0@rated.test' })];
    await replies.until('the first message under way', 1);
    ids.push(...(await sendEach(rig, names('r', 5, 'rated.test').slice(1))));
    await waitFor('four attempts queued for the connection', () => directQueue(rig, 'rated-mail.test'), (n) => n === 4, 20_000);
    replies.open();
    for (const [minute, expected] of [[0, 2], [1, 4], [2, 5]] as const) {
      clock.set(start + minute * MINUTE);
      const rows = await doneForNow(rig, clock, ids);
      expect(receiver.received, `by minute ${minute}`).toHaveLength(expected);
      const waiting = rows.filter((row) => row.send_at !== null);
      expect(waiting.map((row) => [row.send_at!.getTime() - start, row.attempts]), `waiting after minute ${minute}`).toEqual(Array(5 - expected).fill([(minute + 1) * MINUTE, 0]));
    }
    expect(ids.map((id) => messageOf(rig, id).length)).toEqual([1, 1, 1, 1, 1]);
  });

  it("a destination's own perMinute in DELIVERY_POLICY_FILE takes the place of DIRECT_RATE_PER_MINUTE", async () => {
    const receiver = rig.mx.byAddress(OVERRIDE);
    const start = clock.now;
    const ids = await sendEach(rig, names('o', 4, 'override.test'));
    const rows = await doneForNow(rig, clock, ids);
    expect(receiver.received).toHaveLength(3);
    expect(rows.filter((row) => row.send_at !== null).map((row) => [row.send_at!.getTime() - start, row.attempts])).toEqual([[MINUTE, 0]]);
    clock.set(start + MINUTE);
    await expectDelivered(rig, clock, ids);
    expect(receiver.received).toHaveLength(4);
  });

  it('when a host has two addresses and the first refuses, the second takes the mail in the same attempt', async () => {
    await rig.mx.byAddress(TWIN_1).stop();
    const refused = await sendDirect(rig, { to: 'one@twin.test' });
    const first = await handled(rig, clock, refused);
    expect(statusesOf(first)).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
    expect(eventsOf(first, 'DELIVERED')[0]!.data).toMatchObject({ remoteMta: 'mx.twin-mail.test', remoteAddress: TWIN_2 });

    // Listening again, but refusing the recipient for now: the other address, still in the same attempt.
    await rig.mx.byAddress(TWIN_1).start();
    rig.mx.byAddress(TWIN_1).behaviour = { rcpt: () => ({ code: 451, message: '4.3.0 temporarily unable to take mail' }) };
    const deferred = await sendDirect(rig, { to: 'two@twin.test' });
    const second = await handled(rig, clock, deferred);
    expect(statusesOf(second)).toEqual(['QUEUED', 'SENT', 'DELIVERED']);
    expect(rig.mx.byAddress(TWIN_1).refusals).toEqual(['451 4.3.0 temporarily unable to take mail']);
    expect(messageOf(rig, deferred).map((m) => m.receiver)).toEqual([TWIN_2]);
    rig.mx.byAddress(TWIN_1).behaviour = {};
  });
});

describe("direct delivery: RFC 5321's timeouts past the greeting", () => {
  const STALL = '127.0.0.10';
  let rig: DirectRig;
  let clock: Clock;
  beforeAll(async () => {
    // At 1/100: 300 ms to connect (on a busy machine a shorter limit can run out before a good
    // connection is seen), 3 s for a reply, 1.2 s for the reply to DATA, 6 s after the message.
    rig = await startDirectRig({ DIRECT_TIMEOUT_SCALE: '0.01' }, { moreReceivers: [STALL] });
    clock = stopClock(rig);
    provider(rig, 'stall', 'stall.test', [STALL]);
  });
  afterAll(() => rig.stop());

  it.each(['MAIL', 'RCPT', 'DATA', 'DOT'] as const)(
    'a server that stalls on %s is given up at its scaled RFC 5321 timeout: the mail is DELIVERY_DELAYED, and a later attempt delivers it',
    async (stage) => {
      const receiver = rig.mx.byAddress(STALL);
      receiver.behaviour = { hang: stage };
      const id = await sendDirect(rig, { to: `${stage.toLowerCase()}@stall.test` });
      const delayed = await handled(rig, clock, id);
      expect(statusesOf(delayed)).toEqual(['QUEUED', 'DELIVERY_DELAYED']);
      expect(eventsOf(delayed, 'DELIVERY_DELAYED')[0]!.data).toMatchObject({ response: expect.stringMatching(/timeout/), remoteAddress: STALL });
      receiver.behaviour = {};
      clock.set(clock.now + MINUTE);
      const email = await handled(rig, clock, id);
      expect(statusesOf(email)).toEqual(['QUEUED', 'DELIVERY_DELAYED', 'SENT', 'DELIVERED']);
      expect(messageOf(rig, id)).toHaveLength(1);
    },
  );
});
