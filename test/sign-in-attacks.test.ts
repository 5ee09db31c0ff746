import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../src/people/passwords.js';
import { acceptInvite } from '../src/people/team.js';
import { invitePerson, PASSWORD } from './helpers/browser.js';
import { requestFrom, requestUnfinished, type AddressedResponse } from './helpers/client-address.js';
import { startTestServer, type TestServer } from './helpers/server.js';

// The attacks of the second security review, each as the attacker sends it, against the pages
// anyone may post to without a session: /login and the invite link's page.

const LIMIT = 5;
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

let server: TestServer;
let teamId: number;

beforeAll(async () => {
  server = await startTestServer({ AUTH_FAILURES_PER_MINUTE: String(LIMIT) });
  ({ teamId } = await server.team('Attacked'));
});
afterAll(() => server?.stop());

/** A person of the team who has chosen PASSWORD and can sign in. */
async function account(email: string, target = server, team = teamId) {
  const invite = await invitePerson(target, team, email);
  await acceptInvite(target.deps, { token: invite.inviteUrl.split('/').at(-1)!, password: PASSWORD });
  return email;
}

const signIn = (target: TestServer, from: string, email: string, password: string) =>
  requestFrom(from, `${target.url}/login`, { method: 'POST', headers: FORM, body: new URLSearchParams({ email, password }).toString() });

/** The statuses of the answers, counted: `{ 401: 5, 429: 15 }`. */
const tally = (answers: AddressedResponse[]) => answers.reduce<Record<number, number>>((counts, { status }) => ({ ...counts, [status]: (counts[status] ?? 0) + 1 }), {});

const isPage = (answer: AddressedResponse) => answer.headers.get('content-type')?.startsWith('text/html') === true;

describe('an unauthenticated form is bounded to 16 KiB and 20 fields before anything reads it', () => {
  // The reported request: 800,000 fields in 7.9 MB, parsed whole before any throttle.
  const hugeForm = `email=a%40example.test&password=x&${Array.from({ length: 800_000 }, (_, i) => `f${i}=`).join('&')}`;

  it('POST /login declaring 7.9 MB of 800,000 fields is refused with a 413 page while the rest of it has not even been sent', async () => {
    const refused = await requestUnfinished('127.0.0.11', `${server.url}/login`, {
      headers: { ...FORM, 'content-length': String(Buffer.byteLength(hugeForm)) },
      sent: hugeForm.slice(0, 64 * 1024),
    });
    expect(refused.status).toBe(413);
    expect(isPage(refused)).toBe(true);
    expect(refused.text).toContain('The form is larger than the limit of 16384 bytes');
  });

  it('the same form sent chunked, without a length, is refused once 16 KiB of it have come, not at its end', async () => {
    const refused = await requestUnfinished('127.0.0.12', `${server.url}/login`, { headers: FORM, sent: hugeForm.slice(0, 20 * 1024) });
    expect(refused.status).toBe(413);
    expect(isPage(refused)).toBe(true);
  });

  it('a small form of more than 20 fields is refused with 413, on /login and on the invite page', async () => {
    const invite = await invitePerson(server, teamId, 'fields@example.test');
    const extra = Array.from({ length: 18 }, (_, i) => `&f${i}=`).join('');
    const tooMany = {
      [`${server.url}/login`]: `email=fields%40example.test&password=x&next=%2F${extra}`,
      [invite.inviteUrl]: `password=x&confirm=x${extra}&f18=`,
    };
    for (const [url, body] of Object.entries(tooMany)) {
      expect(new URLSearchParams(body).size).toBe(21);
      const refused = await requestFrom('127.0.0.13', url, { method: 'POST', headers: FORM, body });
      expect(refused.status, url).toBe(413);
      expect(isPage(refused)).toBe(true);
      expect(refused.text).toContain('The form has more than 20 fields');
    }
    // The invite was not spent by the refused form.
    expect((await fetch(invite.inviteUrl)).status).toBe(200);
  });

  it('a form of 17 KiB on the invite page is refused with 413, and the invite is not spent', async () => {
    const invite = await invitePerson(server, teamId, 'long@example.test');
    const long = 'x'.repeat(17 * 1024);
    const refused = await requestFrom('127.0.0.14', invite.inviteUrl, {
      method: 'POST',
      headers: FORM,
      body: new URLSearchParams({ password: long, confirm: long }).toString(),
    });
    expect(refused.status).toBe(413);
    expect((await fetch(invite.inviteUrl)).status).toBe(200);
  });

  it('an address blocked for failed sign-ins is refused with 429 before its form is read', async () => {
    const email = await account('blocked-early@example.test');
    for (let i = 0; i < LIMIT; i++) expect((await signIn(server, '127.0.0.15', email, `guess ${i}`)).status).toBe(401);
    // A body that never comes: the answer can only be given without reading it.
    const refused = await requestUnfinished('127.0.0.15', `${server.url}/login`, { headers: { ...FORM, 'content-length': '1000' }, sent: '' });
    expect(refused.status).toBe(429);
    expect(isPage(refused)).toBe(true);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(60);
  });
});

describe('sign-in attempts are counted before the password is checked, so parallel ones cannot race the throttle', () => {
  it(`20 parallel wrong passwords from one address: exactly ${LIMIT} are checked (401), the other 15 refused (429)`, async () => {
    const email = await account('raced@example.test');
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => signIn(server, '127.0.0.21', email, `parallel guess ${i}`)));
    expect(tally(answers)).toEqual({ 401: LIMIT, 429: 20 - LIMIT });
    for (const refused of answers.filter((a) => a.status === 429)) {
      expect(refused.text).toContain('Too many failed sign-ins');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(60);
    }
    // The block holds for the right password too.
    expect((await signIn(server, '127.0.0.21', email, PASSWORD)).status).toBe(429);
  }, 30_000);

  it('a right password is not counted as a failure, even as the last attempt the limit leaves', async () => {
    const email = await account('own-typos@example.test');
    for (let i = 0; i < LIMIT - 1; i++) expect((await signIn(server, '127.0.0.22', email, `typo ${i}`)).status).toBe(401);
    expect((await signIn(server, '127.0.0.22', email, PASSWORD)).status).toBe(303);
    expect((await signIn(server, '127.0.0.22', email, PASSWORD)).status).toBe(303);
  }, 30_000);
});

describe('password derivations wait in a bounded queue: past it, a sign-in is refused at once', () => {
  const BUSY = 'Too many sign-in attempts, try again shortly';

  it('with the queue full, a sign-in and an invite acceptance get 429 with Retry-After, and the invite still works afterwards', async () => {
    const email = await account('queued@example.test');
    const invite = await invitePerson(server, teamId, 'queued-invite@example.test');
    // Far more derivations than the queue holds, started at once in this process, as a burst would.
    const filling = Array.from({ length: 64 }, () => hashPassword('filling the queue').then(() => 'derived', () => 'refused'));

    const refusals = await Promise.all([
      signIn(server, '127.0.0.31', email, PASSWORD),
      requestFrom('127.0.0.31', invite.inviteUrl, { method: 'POST', headers: FORM, body: new URLSearchParams({ password: PASSWORD, confirm: PASSWORD }).toString() }),
    ]);
    for (const refused of refusals) {
      expect(refused.status).toBe(429);
      expect(isPage(refused)).toBe(true);
      expect(refused.text).toContain(BUSY);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    const outcomes = await Promise.all(filling);
    expect(outcomes).toContain('refused');
    expect(outcomes).toContain('derived');

    // Once the queue has drained: nothing was spent or counted.
    expect((await signIn(server, '127.0.0.31', email, PASSWORD)).status).toBe(303);
    const accepted = await fetch(invite.inviteUrl, { method: 'POST', body: new URLSearchParams({ password: PASSWORD, confirm: PASSWORD }), redirect: 'manual' });
    expect(accepted.status).toBe(303);
  }, 60_000);

  it('a burst of 200 parallel sign-ins: those past the queue get 429 at once, and /health answers "ok" while the rest are checked', async () => {
    // No failure limit here (the test servers' default is a million): only the queue stands in the way.
    const open = await startTestServer();
    try {
      const email = await account('burst@example.test', open, (await open.team('Burst')).teamId);
      const burst = Array.from({ length: 200 }, (_, i) => signIn(open, '127.0.0.32', email, `burst guess ${i}`));
      // The first answer comes while the burst's derivations are queued or running. /health then
      // asks the relay (here the capture transport, which checks its folder on libuv's thread
      // pool): with every thread deriving passwords it would wait past its timeout, and say "degraded".
      await Promise.race(burst);
      const health = await requestFrom('127.0.0.33', `${open.url}/health`);
      const answers = await Promise.all(burst);

      expect(health.status).toBe(200);
      expect(JSON.parse(health.text)).toMatchObject({ status: 'ok' });
      expect(Object.keys(tally(answers)).sort()).toEqual(['401', '429']);
      for (const refused of answers.filter((a) => a.status === 429)) {
        expect(refused.text).toContain(BUSY);
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      }
    } finally {
      await open.stop();
    }
  }, 120_000);
});
