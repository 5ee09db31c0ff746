import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { SYSTEM_LINK_PATHS } from '../src/mail/links.js';
import { queueSystemMail, systemLinkToken } from '../src/people/system-mail.js';
import { settled, waitForEmail } from './helpers/emails.js';
import { expectOk, startTestServer, type TestServer } from './helpers/server.js';

/**
 * Mail Mailroom sends to a person of a team (an invite, a password reset) goes the way of every
 * email, from SYSTEM_FROM, and its link is made when it is sent: no token is ever stored.
 */

const SANDBOX = 'sandbox.mailroom.localhost';
const mail = (teamId: number, to: string) => ({
  teamId,
  to,
  subject: 'Choose a new password',
  text: 'Open {{link}} within an hour.',
  html: '<p><a href="{{link}}">Choose a new password</a></p>',
  link: { kind: 'reset' as const, resetId: 'rst_example' },
});

describe('system mail', () => {
  let server: TestServer;
  let teamId: number;
  let key: string;

  beforeAll(async () => {
    server = await startTestServer({ SYSTEM_FROM: `Mailroom <mailroom@${SANDBOX}>`, DISPATCH_POLL_MS: '50' });
    ({ teamId, apiKey: key } = await server.team('Ops'));
    // The sandbox domain is made when the team first lists its domains; tracking is on for it, and must not touch the link.
    const sandbox = (await expectOk(server, key, 'GET', '/v1/domains')).find((domain: any) => domain.name === SANDBOX);
    await expectOk(server, key, 'PATCH', `/v1/domains/${sandbox.id}`, { openTracking: true, clickTracking: true });
  }, 60_000);
  afterAll(() => server?.stop());

  it('is sent from SYSTEM_FROM with a working link in both bodies, while the stored email keeps only the placeholder', async () => {
    const queued = await server.deps.db.transaction().execute((tx) => queueSystemMail(tx, server.deps, mail(teamId, 'ada@example.com')));
    expect(queued).toMatchObject({ queued: true });
    const emailId = (queued as { emailId: string }).emailId;
    const email = await waitForEmail(server, key, emailId, settled);
    expect(email).toMatchObject({ from: `"Mailroom" <mailroom@${SANDBOX}>`, to: 'ada@example.com', latestStatus: 'DELIVERED' });

    const token = systemLinkToken(server.deps, mail(teamId, '').link);
    const url = `${server.deps.config.publicUrl}${SYSTEM_LINK_PATHS.reset}/${token}`;
    const stored = await server.deps.db.selectFrom('emails').select(['html', 'text']).where('id', '=', emailId).executeTakeFirstOrThrow();
    expect(`${stored.html} ${stored.text}`).not.toContain(token);
    expect(stored.text).toContain('{{link}}');

    const eml = (await readFile(path.join(server.deps.config.dataDir, 'outbox', `${emailId}.eml`))).toString();
    const unfolded = eml.replace(/=\r\n/g, '').replace(/=3D/g, '=');
    expect(unfolded).toContain(`Open ${url} within an hour.`);
    expect(unfolded).toContain(`href="${url}"`);
    expect(unfolded).not.toContain('/track/');
  });

  it('is not queued, with the reason, when SYSTEM_FROM is unset, on no verified domain, or on the sandbox while mail is relayed', async () => {
    const reasons: string[] = [];
    for (const env of [{}, { SYSTEM_FROM: 'mailroom@unverified.example' }, { SYSTEM_FROM: `mailroom@${SANDBOX}`, SMTP_URL: 'smtp://127.0.0.1:2' }]) {
      const config = loadConfig({ ...env, DATA_DIR: server.deps.config.dataDir });
      const queued = await server.deps.db.transaction().execute((tx) => queueSystemMail(tx, { config }, mail(teamId, 'bob@example.com')));
      expect(queued.queued).toBe(false);
      reasons.push((queued as { reason: string }).reason);
    }
    expect(reasons[0]).toBe('SYSTEM_FROM is not set');
    expect(reasons[1]).toBe('SYSTEM_FROM (mailroom@unverified.example) is not on a verified domain of any team');
    expect(reasons[2]).toMatch(/^SYSTEM_FROM \(mailroom@sandbox\.mailroom\.localhost\): sandbox\.mailroom\.localhost is the sandbox domain/);
    const count = await server.deps.db.selectFrom('emails').select((eb) => eb.fn.countAll<number>().as('n')).where('to_addresses', '@>', JSON.stringify(['bob@example.com']) as never).executeTakeFirstOrThrow();
    expect(Number(count.n)).toBe(0);
  });
});
