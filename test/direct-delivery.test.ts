import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { expectApiError } from './helpers/api-error.js';
import { ALPHA_1, ALPHA_2, BETA, GAMMA, IMPLICIT, eventsOf, messageOf, sendDirect, startDirectRig, type DirectRig } from './helpers/direct-delivery.js';
import { settled, statusesOf, waitForEmail } from './helpers/emails.js';
import { expectOk } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

/**
 * Direct delivery (SMTP_URL=direct) against real parts on loopback: a DNS server answering MX, A,
 * null MX and NXDOMAIN, and SMTP receivers on 127.0.0.2–6 sharing one port, standing in for the
 * mail servers of providers (the rig of helpers/direct-delivery.ts). Providers: alpha (mx1 on .2,
 * mx2 on .3) hosts a.test, b.test and c.test; beta (.4) hosts beta.test; gamma (.5) hosts
 * gamma.test; .6 is a domain's own address.
 */

const METRICS_TOKEN = 'metrics-token-for-direct';

describe('direct delivery', () => {
  let rig: DirectRig;
  beforeAll(async () => {
    rig = await startDirectRig({ METRICS_TOKEN: METRICS_TOKEN });
  });
  afterAll(() => rig.stop());
  afterEach(async () => {
    for (const receiver of rig.mx.receivers) {
      receiver.behaviour = {};
      if (receiver.openSessions() === 0) await receiver.start().catch(() => undefined);
    }
  });

  it('sends each domain its recipients in one transaction to its most preferred MX, over STARTTLS, and records the server and its reply', async () => {
    const id = await sendDirect(rig, { to: ['ann@a.test', 'bob@a.test'], cc: 'cy@a.test', bcc: 'dee@beta.test' });
    const email = await waitForEmail(rig.server, rig.key, id, settled);
    expect(email.latestStatus).toBe('DELIVERED');
    const messages = messageOf(rig, id);
    expect(messages.map((m) => [m.receiver, [...m.rcptTo].sort()])).toEqual(
      expect.arrayContaining([[ALPHA_1, ['ann@a.test', 'bob@a.test', 'cy@a.test']], [BETA, ['dee@beta.test']]]),
    );
    expect(messages).toHaveLength(2);
    expect(messages.every((m) => m.secure && m.helo === 'out.mailroom.test')).toBe(true);
    const delivered = eventsOf(email, 'DELIVERED').map((event) => event.data);
    expect(delivered).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ remoteMta: 'mx1.alpha-mail.test', remoteAddress: ALPHA_1, tls: true, recipients: ['ann@a.test', 'bob@a.test', 'cy@a.test'], response: expect.stringMatching(/^250/) }),
        expect.objectContaining({ remoteMta: 'mx.beta-mail.test', remoteAddress: BETA, recipients: ['dee@beta.test'] }),
      ]),
    );
    // Bcc leaves no header behind.
    expect(messages[0]!.raw.toString('latin1')).not.toMatch(/^Bcc:/im);
  });

  it('goes to the secondary MX when the primary refuses connections', async () => {
    await rig.mx.byAddress(ALPHA_1).stop();
    const id = await sendDirect(rig, { to: 'eve@b.test' });
    const email = await waitForEmail(rig.server, rig.key, id, settled);
    expect(email.latestStatus).toBe('DELIVERED');
    expect(messageOf(rig, id).map((m) => m.receiver)).toEqual([ALPHA_2]);
    expect(eventsOf(email, 'DELIVERED')[0]!.data).toMatchObject({ remoteMta: 'mx2.alpha-mail.test', remoteAddress: ALPHA_2 });
  });

  it('a 550 for one of three recipients bounces that one alone, suppressed; the other two are delivered once', async () => {
    rig.mx.byAddress(GAMMA).behaviour = { rcpt: (address) => (address === 'gone@gamma.test' ? { code: 550, message: '5.1.1 no such user here' } : null) };
    const id = await sendDirect(rig, { to: ['one@gamma.test', 'gone@gamma.test', 'two@gamma.test'] });
    const email = await waitForEmail(rig.server, rig.key, id, settled);
    expect(messageOf(rig, id).map((m) => m.rcptTo)).toEqual([['one@gamma.test', 'two@gamma.test']]);
    expect(eventsOf(email, 'BOUNCED').map((event) => event.data)).toEqual([
      expect.objectContaining({ bounceType: 'Permanent', recipients: ['gone@gamma.test'], response: '550 5.1.1 no such user here', remoteMta: 'mx.gamma-mail.test' }),
    ]);
    expect(eventsOf(email, 'DELIVERED')[0]!.data.recipients).toEqual(['one@gamma.test', 'two@gamma.test']);
    const suppressions = await expectOk(rig.server, rig.key, 'GET', '/v1/suppressions');
    expect(suppressions.data.map((s: { email: string }) => s.email)).toEqual(['gone@gamma.test']);
  });

  it('greylisting (451, then 250) ends DELIVERED after a DELIVERY_DELAYED that names the reply and the next attempt', async () => {
    rig.mx.byAddress(BETA).behaviour = { rcpt: (_address, tries) => (tries === 0 ? { code: 451, message: '4.7.1 greylisted, try again later' } : null) };
    const id = await sendDirect(rig, { to: 'grey@beta.test' });
    const email = await waitForEmail(rig.server, rig.key, id, (e) => e.latestStatus === 'DELIVERED');
    expect(statusesOf(email)).toEqual(['QUEUED', 'DELIVERY_DELAYED', 'SENT', 'DELIVERED']);
    expect(eventsOf(email, 'DELIVERY_DELAYED')[0]!.data).toMatchObject({ response: '451 4.7.1 greylisted, try again later', recipients: ['grey@beta.test'], remoteMta: 'mx.beta-mail.test', nextAttemptAt: expect.any(String) });
    expect(messageOf(rig, id)).toHaveLength(1);
  });

  it('an email to two domains, one deferring, is delivered to the other once and to the deferring one when it takes it', async () => {
    let refusing = true;
    rig.mx.byAddress(GAMMA).behaviour = { rcpt: () => (refusing ? { code: 450, message: '4.2.1 mailbox busy' } : null) };
    const id = await sendDirect(rig, { to: ['x@beta.test', 'y@gamma.test'] });
    await waitForEmail(rig.server, rig.key, id, (e) => eventsOf(e, 'DELIVERY_DELAYED').length >= 2);
    refusing = false;
    const email = await waitForEmail(rig.server, rig.key, id, (e) => eventsOf(e, 'DELIVERED').length === 2);
    // The recipient delivered first is not sent to again by the retries.
    expect(messageOf(rig, id).map((m) => m.rcptTo).sort()).toEqual([['x@beta.test'], ['y@gamma.test']]);
    expect(eventsOf(email, 'DELIVERED').map((event) => event.data.recipients)).toEqual([['x@beta.test'], ['y@gamma.test']]);
  });

  it('null MX and a domain that does not exist bounce at once without a connection; a domain with only an address record is its own MX', async () => {
    const sessionsBefore = rig.mx.receivers.map((r) => r.remoteAddresses.length);
    const [nullMx, missing] = await Promise.all([sendDirect(rig, { to: 'who@nullmx.test' }), sendDirect(rig, { to: 'who@missing.test' })]);
    for (const [id, reason] of [[nullMx, /null MX/], [missing, /does not exist/]] as const) {
      const email = await waitForEmail(rig.server, rig.key, id, settled);
      expect(statusesOf(email)).toEqual(['QUEUED', 'BOUNCED']);
      expect(eventsOf(email, 'BOUNCED')[0]!.data).toMatchObject({ bounceType: 'Permanent', response: expect.stringMatching(reason) });
    }
    expect(rig.mx.receivers.map((r) => r.remoteAddresses.length)).toEqual(sessionsBefore);
    const implicit = await sendDirect(rig, { to: 'own@implicit.test' });
    expect((await waitForEmail(rig.server, rig.key, implicit, settled)).latestStatus).toBe('DELIVERED');
    expect(messageOf(rig, implicit).map((m) => m.receiver)).toEqual([IMPLICIT]);
  });

  it('a resolver fault is transient: DELIVERY_DELAYED, then delivered once DNS answers again', async () => {
    rig.dns.failWith(2);
    const id = await sendDirect(rig, { to: 'later@c.test' });
    await waitForEmail(rig.server, rig.key, id, (e) => eventsOf(e, 'DELIVERY_DELAYED').length > 0);
    rig.dns.failWith(null);
    const email = await waitForEmail(rig.server, rig.key, id, (e) => e.latestStatus === 'DELIVERED');
    expect(eventsOf(email, 'DELIVERY_DELAYED')[0]!.data.response).toMatch(/SERVFAIL/);
  });

  it('a server that never greets is given up after the scaled greeting timeout, and the next MX takes the mail', async () => {
    // A provider of its own, so that no connection is open to it yet.
    rig.dns.set('mx1.hang-mail.test', [{ type: 'A', address: IMPLICIT }]);
    rig.dns.set('mx2.hang-mail.test', [{ type: 'A', address: GAMMA }]);
    rig.dns.set('hang.test', [{ type: 'MX', exchange: 'mx1.hang-mail.test', priority: 10 }, { type: 'MX', exchange: 'mx2.hang-mail.test', priority: 20 }]);
    rig.mx.byAddress(IMPLICIT).behaviour = { connect: () => 'hang' };
    const id = await sendDirect(rig, { to: 'slow@hang.test' });
    const email = await waitForEmail(rig.server, rig.key, id, settled);
    expect(email.latestStatus).toBe('DELIVERED');
    expect(messageOf(rig, id).map((m) => m.receiver)).toEqual([GAMMA]);
    expect(eventsOf(email, 'DELIVERED')[0]!.data.remoteMta).toBe('mx2.hang-mail.test');
  });

  it("counts each recipient's outcome per destination in /metrics, with each destination's queue", async () => {
    const id = await sendDirect(rig, { to: 'metered@beta.test' });
    await waitForEmail(rig.server, rig.key, id, settled);
    const metrics = await (await fetch(`${rig.server.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
    const delivered = Number(/^mailroom_direct_deliveries_total\{destination="beta-mail\.test",result="delivered"\} (\d+)$/m.exec(metrics)?.[1]);
    expect(delivered).toBeGreaterThanOrEqual(1);
    expect(metrics).toMatch(/^mailroom_direct_deliveries_total\{destination="gamma-mail\.test",result="bounced"\} [1-9]/m);
    expect(metrics).toMatch(/^mailroom_direct_queue\{destination="beta-mail\.test"\} 0$/m);
  });

  it('shows the team its destinations, and another team or a domain-scoped key nothing of them', async () => {
    // Mail leaves the count in flight when its session is done with it, which may be a moment after its outcome was stored.
    const { data } = await waitFor(
      'alpha with nothing left in flight',
      () => expectOk(rig.server, rig.key, 'GET', '/v1/deliverability/destinations'),
      (view: any) => view.data.some((d: any) => d.destination === 'alpha-mail.test' && d.inFlight === 0),
    );
    const alpha = data.find((d: any) => d.destination === 'alpha-mail.test');
    expect(alpha).toMatchObject({ queued: 0, inFlight: 0, pausedUntil: null });
    expect(alpha.lastHour.delivered).toBeGreaterThan(0);
    expect(data.find((d: any) => d.destination === 'gamma-mail.test').lastHour.bounced).toBeGreaterThanOrEqual(1);

    const other = await rig.server.team('Other');
    expect(await expectOk(rig.server, other.apiKey, 'GET', '/v1/deliverability/destinations')).toEqual({ data: [] });
    const domain = (await expectOk(rig.server, rig.key, 'GET', '/v1/domains')).find((d: any) => d.name === 'sender.example');
    const scoped = await rig.server.key((await rig.server.deps.db.selectFrom('domains').select('team_id').where('id', '=', domain.id).executeTakeFirstOrThrow()).team_id, 'full', domain.id);
    expectApiError(await rig.server.call('GET', '/v1/deliverability/destinations', { key: scoped }), 403, 'FORBIDDEN');
  });
});

describe('direct delivery: one provider at its limits', () => {
  let rig: DirectRig;
  beforeAll(async () => {
    // A dispatcher that holds twenty emails at once: a destination that kept them all would stop the rest.
    // SMTP's timeouts at a twentieth (15 s for a greeting, 30 s after a message): replies a test
    // holds, or a busy machine delays, stay well within them, so no mail goes a second way.
    rig = await startDirectRig({ DIRECT_MAX_CONNECTIONS: '2', DISPATCH_BATCH_SIZE: '10', DISPATCH_CONCURRENCY: '2', DIRECT_TIMEOUT_SCALE: '0.05' });
  });
  afterAll(() => rig.stop());

  it('never opens more than DIRECT_MAX_CONNECTIONS to a destination, across every domain it hosts', async () => {
    const alpha = rig.mx.byAddress(ALPHA_1);
    alpha.behaviour = { replyDelayMs: 50 };
    alpha.resetPeak();
    const ids = await Promise.all(Array.from({ length: 24 }, (_, i) => sendDirect(rig, { to: `r${i}@${['a', 'b', 'c'][i % 3]}.test` })));
    for (const id of ids) expect((await waitForEmail(rig.server, rig.key, id, settled)).latestStatus).toBe('DELIVERED');
    expect(alpha.received.length).toBeGreaterThanOrEqual(24);
    expect(alpha.peakSessions).toBeLessThanOrEqual(2);
    expect(alpha.peakSessions).toBeGreaterThanOrEqual(1);
  });

  it('mail sent ahead on a connection (PIPELINING) behind a message refused for now is reset and sent later, once, never empty', async () => {
    const alpha1 = rig.mx.byAddress(ALPHA_1);
    let refused = false;
    alpha1.behaviour = {
      replyDelayMs: 20,
      data: (message) => (!refused && message.raw.toString('latin1').includes('Subject: Refuse me once') ? ((refused = true), { code: 451, message: '4.3.0 try the other one' }) : null),
    };
    const ids = await Promise.all(Array.from({ length: 12 }, (_, i) => sendDirect(rig, { to: `p${i}@a.test`, subject: i === 3 ? 'Refuse me once' : `Piped ${i}` })));
    for (const id of ids) expect((await waitForEmail(rig.server, rig.key, id, settled)).latestStatus).toBe('DELIVERED');
    expect(refused).toBe(true);
    const messages = ids.map((id) => messageOf(rig, id));
    expect(messages.map((copies) => copies.length)).toEqual(Array(12).fill(1));
    expect(messages.flat().every((m) => /^Subject: /m.test(m.raw.toString('latin1')))).toBe(true);
    expect(messages[3]![0]!.receiver).toBe(ALPHA_2);
    alpha1.behaviour = {};
  });

  it('a slow destination keeps only its share of the dispatcher\'s places: a healthy one gets all of its mail while the slow one is still at its first', async () => {
    const gamma = rig.mx.byAddress(GAMMA);
    // Gamma answers no message until the healthy destination has all of its mail: however slow the
    // machine, the slow one is still at its first message on each of its connections meanwhile.
    let answer!: () => void;
    const held = new Promise<void>((resolve) => (answer = resolve));
    gamma.behaviour = { replyWhen: () => held };
    const slow = await Promise.all(Array.from({ length: 30 }, (_, i) => sendDirect(rig, { to: `lag${i}@gamma.test` })));
    try {
      await waitFor('the slow destination at work', async () => gamma.received.length, (n) => n > 0);
      const healthy = await Promise.all(Array.from({ length: 10 }, (_, i) => sendDirect(rig, { to: `quick${i}@beta.test` })));
      for (const id of healthy) expect((await waitForEmail(rig.server, rig.key, id, settled)).latestStatus).toBe('DELIVERED');
      expect(gamma.received.length).toBeLessThanOrEqual(2);
      // What it keeps waiting in memory is its share of the dispatcher's twenty places, never all of
      // them. The view shows a destination once the process has reported it (every few seconds):
      // read from a report made while the slow one had mail in flight.
      const view = await waitFor(
        'the slow destination in the view, at work',
        () => expectOk(rig.server, rig.key, 'GET', '/v1/deliverability/destinations'),
        (found: any) => found.data.some((d: any) => d.destination === 'gamma-mail.test' && d.inFlight > 0),
      );
      expect(view.data.find((d: any) => d.destination === 'gamma-mail.test').queued).toBeLessThan(20);
    } finally {
      gamma.behaviour = {};
      answer();
    }
    for (const id of slow) expect((await waitForEmail(rig.server, rig.key, id, (e) => e.latestStatus === 'DELIVERED')).latestStatus).toBe('DELIVERED');
    expect(gamma.received.filter((m) => m.rcptTo[0]!.startsWith('lag'))).toHaveLength(30);
  });

  it('a destination answering 421 is paused and its mail waits, while a healthy destination gets all of its mail meanwhile', async () => {
    // Connections left from before close once idle: from then on every connection meets the 421.
    await waitFor('no connection open to it', async () => rig.mx.byAddress(GAMMA).openSessions(), (n) => n === 0);
    rig.mx.byAddress(GAMMA).behaviour = { connect: () => ({ code: 421, message: '4.7.0 too many connections, slow down' }) };
    const slow = await Promise.all(Array.from({ length: 10 }, (_, i) => sendDirect(rig, { to: `s${i}@gamma.test` })));
    const healthy = await Promise.all(Array.from({ length: 10 }, (_, i) => sendDirect(rig, { to: `h${i}@beta.test` })));
    for (const id of healthy) expect((await waitForEmail(rig.server, rig.key, id, settled)).latestStatus).toBe('DELIVERED');
    // Every healthy one through, and not one of the 421ing destination's.
    const ofThisTest = () => rig.mx.byAddress(GAMMA).received.filter((m) => /^s\d+@/.test(m.rcptTo[0]!));
    expect(ofThisTest()).toHaveLength(0);
    const { data } = await waitFor(
      'the paused destination in the view',
      () => expectOk(rig.server, rig.key, 'GET', '/v1/deliverability/destinations'),
      (view: any) => view.data.some((d: any) => d.destination === 'gamma-mail.test' && d.pausedUntil !== null),
    );
    expect(data.find((d: any) => d.destination === 'gamma-mail.test').queued).toBeGreaterThan(0);
    // Once it takes mail again, all of its mail arrives, each once.
    rig.mx.byAddress(GAMMA).behaviour = {};
    for (const id of slow) expect((await waitForEmail(rig.server, rig.key, id, (e) => e.latestStatus === 'DELIVERED')).latestStatus).toBe('DELIVERED');
    expect(ofThisTest()).toHaveLength(10);
  });
});

describe("direct delivery: a destination's own limits from DELIVERY_POLICY_FILE", () => {
  let rig: DirectRig;
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-policy-'));
    const policy = path.join(dir, 'policy.json');
    await writeFile(policy, JSON.stringify({ 'beta-mail.test': { maxConnections: 1, perMinute: 3 } }));
    rig = await startDirectRig({ DELIVERY_POLICY_FILE: policy });
  });
  afterAll(async () => {
    await rig.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('one connection and three messages a minute for that destination: the rest wait for the next minute, untried', async () => {
    const beta = rig.mx.byAddress(BETA);
    beta.behaviour = { replyDelayMs: 30 };
    beta.resetPeak();
    const sentAt = Date.now();
    const ids = await Promise.all(Array.from({ length: 6 }, (_, i) => sendDirect(rig, { to: `q${i}@beta.test` })));
    await waitFor('three delivered', async () => beta.received.length, (n) => n === 3);
    // While the one connection is busy the rest come back every moment; past the rate they wait for the next minute.
    const waiting = await waitFor(
      'the other three given back until the minute has passed',
      () => rig.server.deps.db.selectFrom('emails').select(['send_at', 'attempts', 'claimed_by']).where('id', 'in', ids).where('send_at', 'is not', null).execute(),
      (rows) => rows.length === 3 && rows.every((row) => row.claimed_by === null && row.send_at!.getTime() >= sentAt + 55_000),
    );
    expect(waiting.map((row) => row.attempts), 'postponed, never tried').toEqual([0, 0, 0]);
    expect(beta.peakSessions).toBe(1);
    expect(beta.received).toHaveLength(3);
  });
});

describe('direct delivery: IP pools and TLS', () => {
  let rig: DirectRig;
  beforeAll(async () => {
    rig = await startDirectRig({
      IP_POOLS: 'dedicated=127.0.0.7/out1.mailroom.test,127.0.0.8/out2.mailroom.test',
      DIRECT_MESSAGES_PER_CONNECTION: '1',
    });
  });
  afterAll(() => rig.stop());

  it("a domain's mail leaves from its pool's addresses in turn, each saying HELO with its own name; an unknown pool is 400", async () => {
    const domain = (await expectOk(rig.server, rig.key, 'GET', '/v1/domains')).find((d: any) => d.name === 'sender.example');
    const refused = await rig.server.call('PATCH', `/v1/domains/${domain.id}`, { key: rig.key, body: { ipPool: 'nowhere' } });
    expectApiError(refused, 400, 'VALIDATION_ERROR');
    expect(refused.body.error.details).toEqual([{ path: 'ipPool', message: 'must be one of the IP pools this server has (IP_POOLS): default, dedicated' }]);
    expect(await expectOk(rig.server, rig.key, 'PATCH', `/v1/domains/${domain.id}`, { ipPool: 'dedicated' })).toMatchObject({ ipPool: 'dedicated' });

    const beta = rig.mx.byAddress(BETA);
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await sendDirect(rig, { to: `p${i}@beta.test` }));
    for (const id of ids) expect((await waitForEmail(rig.server, rig.key, id, settled)).latestStatus).toBe('DELIVERED');
    const seen = beta.received.map((m) => `${m.remoteAddress} ${m.helo}`);
    expect(new Set(seen)).toEqual(new Set(['127.0.0.7 out1.mailroom.test', '127.0.0.8 out2.mailroom.test']));
  });
});

describe('direct delivery: a receiver without STARTTLS', () => {
  it('is sent to in clear by default, and not at all with DIRECT_REQUIRE_TLS', async () => {
    const open = await startDirectRig({}, { starttls: false });
    try {
      const id = await sendDirect(open, { to: 'plain@beta.test' });
      expect((await waitForEmail(open.server, open.key, id, settled)).latestStatus).toBe('DELIVERED');
      expect(messageOf(open, id)[0]!.secure).toBe(false);
    } finally {
      await open.stop();
    }
    const strict = await startDirectRig({ DIRECT_REQUIRE_TLS: 'true' }, { starttls: false });
    try {
      const id = await sendDirect(strict, { to: 'plain@beta.test' });
      const email = await waitForEmail(strict.server, strict.key, id, (e) => eventsOf(e, 'DELIVERY_DELAYED').length > 0);
      expect(eventsOf(email, 'DELIVERY_DELAYED')[0]!.data.response).toMatch(/TLS/);
      expect(strict.mx.all()).toHaveLength(0);
    } finally {
      await strict.stop();
    }
  });
});
