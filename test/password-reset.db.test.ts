import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Db } from '../src/db/connection.js';
import { base32Decode, hotp, timeStep } from '../src/people/totp.js';
import { PASSWORD } from './helpers/browser.js';
import { settled, waitForEmail } from './helpers/emails.js';
import { FormClient, signedInClient, visibleText } from './helpers/form-client.js';
import { recordingLogger } from './helpers/log.js';
import { expectOk, startTestServer, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/wait.js';

// A forgotten password, reset by a link mailed from SYSTEM_FROM through Mailroom itself: good
// once, for an hour, ending every session; the same answer for any address asked about.

const SANDBOX = 'sandbox.mailroom.localhost';
const NEW_PASSWORD = 'a new password nobody guesses';
const ANSWER = 'If that address has an account, a link is on its way.';

let server: TestServer;
let teamId: number;
let key: string;
let unique = 0;

beforeAll(async () => {
  server = await startTestServer({ SYSTEM_FROM: `Mailroom <mailroom@${SANDBOX}>`, DISPATCH_POLL_MS: '50' });
  ({ teamId, apiKey: key } = await server.team('Resets'));
  // The team's sandbox domain, which SYSTEM_FROM is on, is made when it first lists its domains.
  await expectOk(server, key, 'GET', '/v1/domains');
});
afterAll(() => server?.stop());

/** A person of the team who has chosen PASSWORD, signed in in a client of their own. */
const person = (target = server, team = teamId) => signedInClient(target, team, `person-${unique++}@resets.test`);

const signIn = async (email: string, password: string) => (await new FormClient(server.url).post('/login', { email, password })).status;

/** The reset mails queued to the address. */
const resetMails = (address: string) =>
  server.deps.db
    .selectFrom('emails')
    .select('id')
    .where(sql<boolean>`system_link->>'kind' = 'reset'`)
    .where(sql<boolean>`to_addresses @> ${JSON.stringify([address])}::jsonb`)
    .orderBy('created_at')
    .execute();

/** Asks for a link for the address, then waits for the mail and answers the link's path as it arrived (PUBLIC_URL names another port). */
async function mailedLink(address: string): Promise<string> {
  const before = (await resetMails(address)).length;
  const answer = await new FormClient(server.url).post('/forgot-password', { email: address });
  expect(answer.status).toBe(200);
  const mails = await waitFor(`a reset mail to ${address}`, () => resetMails(address), (rows) => rows.length > before);
  const emailId = mails.at(-1)!.id;
  expect((await waitForEmail(server, key, emailId, settled)).latestStatus).toBe('DELIVERED');
  const eml = (await readFile(path.join(server.deps.config.dataDir, 'outbox', `${emailId}.eml`), 'utf8')).replace(/=\r?\n/g, '').replace(/=3D/g, '=');
  const links = [...eml.matchAll(/https?:\/\/[^\s"<]*(\/reset-password\/[\w.-]+)/g)].map((match) => match[1]!);
  expect(links.length).toBeGreaterThan(0);
  expect(new Set(links).size).toBe(1);
  return links[0]!;
}

const setPassword = (link: string, password: string, client = new FormClient(server.url)) => client.post(link, { password, confirm: password });

describe('asking for a reset link', () => {
  it('the sign-in page links to it; an address with an account and one without get the same answer, and only the first is mailed', async () => {
    const login = await new FormClient(server.url).get('/login');
    expect(login.text).toContain('<a href="/forgot-password">Forgot password?</a>');
    const form = await new FormClient(server.url).get('/forgot-password');
    expect(form.status).toBe(200);
    expect(form.text).toContain('<label for="f-email">Email</label>');

    const { email } = await person();
    const known = await new FormClient(server.url).post('/forgot-password', { email });
    const unknown = await new FormClient(server.url).post('/forgot-password', { email: 'nobody-here@resets.test' });
    expect([known.status, unknown.status]).toEqual([200, 200]);
    expect(visibleText(known.text)).toContain(ANSWER);
    expect(unknown.text).toBe(known.text);

    await waitFor('the reset mail', () => resetMails(email), (rows) => rows.length === 1);
    expect(await resetMails('nobody-here@resets.test')).toEqual([]);
  });

  it('an address that is not one is said to be wrong, whether or not anyone has it', async () => {
    const answer = await new FormClient(server.url).post('/forgot-password', { email: 'not an address' });
    expect(answer.status).toBe(400);
    expect(visibleText(answer.text)).not.toContain(ANSWER);
  });
});

describe('the mailed link', () => {
  it('sets a new password once: every session ends, the new password signs in, the old one does not, and the link used again is refused', async () => {
    const { email, userId, client } = await person();
    const elsewhere = new FormClient(server.url);
    expect(await elsewhere.post('/login', { email, password: PASSWORD })).toMatchObject({ status: 303 });
    const link = await mailedLink(email);

    const page = await new FormClient(server.url).get(link);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`<p>For <strong>${email}</strong>.`);
    const differ = await new FormClient(server.url).post(link, { password: NEW_PASSWORD, confirm: 'something else' });
    expect(differ.status).toBe(400);
    const common = await setPassword(link, 'qwertyuiop');
    expect(common.status).toBe(400);
    expect(common.text).toContain('is one of the most common passwords');

    const changed = await setPassword(link, NEW_PASSWORD);
    expect(changed.status).toBe(200);
    expect(visibleText(changed.text)).toContain('Your new password is set, and every session of yours has ended.');
    for (const session of [client, elsewhere]) expect((await session.get('/account')).status).toBe(303);
    expect(await signIn(email, PASSWORD)).toBe(401);
    expect(await signIn(email, NEW_PASSWORD)).toBe(303);

    for (const again of [await new FormClient(server.url).get(link), await setPassword(link, 'yet another fine password')]) {
      expect(again.status).toBe(404);
      expect(visibleText(again.text)).toContain('This reset link has been used');
    }
    expect(await signIn(email, NEW_PASSWORD)).toBe(303);

    const rows = await server.deps.db.selectFrom('audit_log').selectAll().where('target_id', '=', userId).execute();
    expect(rows.map((row) => ({ action: row.action, actor: [row.actor_type, row.actor_id, row.actor_label], team: row.team_id }))).toEqual([
      { action: 'user.passwordReset', actor: ['user', userId, email], team: teamId },
    ]);
    expect(rows[0]!.ip).toMatch(/^(::ffff:)?127\./);
  });

  it('expires an hour after it was asked for: the page says so, and the password stays', async () => {
    const { email } = await person();
    const link = await mailedLink(email);
    try {
      const asked = Date.now();
      server.deps.clock = () => new Date(asked + 59 * 60_000);
      expect((await new FormClient(server.url).get(link)).status).toBe(200);
      server.deps.clock = () => new Date(asked + 61 * 60_000);
      for (const late of [await new FormClient(server.url).get(link), await setPassword(link, NEW_PASSWORD)]) {
        expect(late.status).toBe(404);
        expect(visibleText(late.text)).toContain('This reset link has expired (links work for an hour)');
        expect(late.text).toContain('<a class="button" href="/forgot-password">Ask for a new link</a>');
      }
    } finally {
      server.deps.clock = () => new Date();
    }
    expect(await signIn(email, PASSWORD)).toBe(303);
  });

  it('posted twice at once, changes the password once: one post succeeds, the other is told the link is used', async () => {
    const { email } = await person();
    const link = await mailedLink(email);
    const answers = await Promise.all([setPassword(link, NEW_PASSWORD), setPassword(link, 'the other new password')]);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, 404]);
    const winner = answers[0]!.status === 200 ? NEW_PASSWORD : 'the other new password';
    expect(await signIn(email, winner)).toBe(303);
  });

  it('stops working once the password is changed on the account page', async () => {
    const { email, client } = await person();
    const link = await mailedLink(email);
    expect((await client.post('/account/password', { currentPassword: PASSWORD, newPassword: NEW_PASSWORD, confirmPassword: NEW_PASSWORD })).status).toBe(303);
    expect((await setPassword(link, 'yet another fine password')).status).toBe(404);
    expect(await signIn(email, NEW_PASSWORD)).toBe(303);
  });

  it('does not get past two-factor sign-in: after the reset, the new password still asks for a code', async () => {
    const { email, client } = await person();
    const setup = await client.post('/account/two-factor', { setupPassword: PASSWORD });
    const secret = /secret=([A-Z2-7]+)/.exec(setup.text)![1]!;
    expect((await client.post('/account/two-factor/confirm', { setupCode: hotp(base32Decode(secret), timeStep(new Date())) })).status).toBe(200);

    expect((await setPassword(await mailedLink(email), NEW_PASSWORD)).status).toBe(200);
    const browser = new FormClient(server.url);
    const answer = await browser.post('/login', { email, password: NEW_PASSWORD });
    expect(answer.location).toBe('/login/code?next=%2F');
    expect(browser.session).toBeUndefined();
  });
});

describe('requests for links are throttled, per address asked about and per client', () => {
  const LIMIT = 3;

  it(`after ${LIMIT} requests for one address, from any clients, or from one client for any addresses, the next is refused (429)`, async () => {
    const strict = await startTestServer({ AUTH_FAILURES_PER_MINUTE: String(LIMIT), SYSTEM_FROM: `mailroom@${SANDBOX}` });
    try {
      const ask = (email: string, from?: string) => new FormClient(strict.url, from).post('/forgot-password', { email });
      for (let i = 0; i < LIMIT; i++) expect((await ask('target@resets.test')).status).toBe(200);
      const perAddress = await ask('target@resets.test');
      expect(perAddress.status).toBe(429);
      expect(visibleText(perAddress.text)).toContain('Too many requests for reset links');

      for (let i = 0; i < LIMIT; i++) expect((await ask(`someone-${i}@resets.test`, '127.0.9.9')).status).toBe(200);
      expect((await ask('someone-else@resets.test', '127.0.9.9')).status).toBe(429);
      expect((await ask('someone-else@resets.test', '127.0.9.10')).status).toBe(200);
    } finally {
      await strict.stop();
    }
  });
});

describe('without SYSTEM_FROM', () => {
  it('the answer is the same; the operator is told in the log why nothing was mailed, and the link is shown nowhere', async () => {
    const logs = recordingLogger();
    const unmailed = await startTestServer({}, { log: logs.log });
    try {
      const { email, userId } = await person(unmailed, (await unmailed.team('No sender')).teamId);
      const answer = await new FormClient(unmailed.url).post('/forgot-password', { email });
      expect(answer.status).toBe(200);
      expect(visibleText(answer.text)).toContain(ANSWER);
      expect(answer.text).not.toContain('/reset-password/');
      const warnings = logs.entries.filter((entry) => entry.msg.includes('password reset'));
      expect(warnings).toEqual([{ level: 'warn', msg: 'a password reset link was asked for but cannot be mailed', fields: { userId, reason: 'SYSTEM_FROM is not set' } }]);
      expect(JSON.stringify(logs.entries)).not.toContain('/reset-password/');
    } finally {
      await unmailed.stop();
    }
  });
});

/** Every row of every table, as a dump would have them. */
async function dumpRows(db: Db): Promise<string> {
  const tables = await sql<{ name: string }>`
    SELECT table_name AS name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`.execute(db);
  const dump: Record<string, unknown[]> = {};
  for (const { name } of tables.rows) dump[name] = (await sql`SELECT * FROM ${sql.table(name)}`.execute(db)).rows;
  return JSON.stringify(dump);
}

describe('secrets at rest', () => {
  it('no TOTP secret, recovery code or reset token is in any row of the database in clear, nor in the audit log', async () => {
    const { email, client } = await person();
    const setup = await client.post('/account/two-factor', { setupPassword: PASSWORD });
    const secret = /secret=([A-Z2-7]+)/.exec(setup.text)![1]!;
    const on = await client.post('/account/two-factor/confirm', { setupCode: hotp(base32Decode(secret), timeStep(new Date())) });
    const recoveryCodes = /<pre>([^<]*)<\/pre>/.exec(on.text)![1]!.split('\n');
    const link = await mailedLink(email);
    const token = link.split('/').at(-1)!;

    const raw = base32Decode(secret);
    const traces: Record<string, string> = {
      'the TOTP secret': secret,
      'the TOTP secret in lower case': secret.toLowerCase(),
      'the TOTP secret in hex': raw.toString('hex'),
      'the TOTP secret in base64': raw.toString('base64').replace(/=+$/, ''),
      'the reset token': token,
      "the reset token's signature": token.split('.').at(-1)!,
    };
    for (const [i, code] of recoveryCodes.entries()) {
      traces[`recovery code ${i}`] = code;
      traces[`recovery code ${i} without dashes`] = code.replace(/-/g, '');
    }
    const rows = await dumpRows(server.deps.db);
    expect(rows).toContain(email);
    expect(Object.entries(traces).filter(([, trace]) => rows.includes(trace)).map(([what]) => what)).toEqual([]);

    const audit = JSON.stringify(await server.deps.db.selectFrom('audit_log').selectAll().execute());
    expect(audit).toContain('user.twoFactorEnabled');
    expect(Object.entries(traces).filter(([, trace]) => audit.includes(trace)).map(([what]) => what)).toEqual([]);
  });
});
