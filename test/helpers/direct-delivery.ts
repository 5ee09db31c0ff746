import { verifiedDomain } from './domains.js';
import { startDnsServer, type TestDnsServer } from './dns-server.js';
import { startMxReceivers, type MxReceivers } from './mx-receivers.js';
import { expectOk, startTestServer, type TestServer } from './server.js';

/**
 * Direct delivery (SMTP_URL=direct) in a test: RFC 5321's timeouts at 1/50 (a connection 600 ms,
 * a reply 6 s: short enough for a test of a silent server, long enough that a busy machine's pauses
 * are not taken for one), a pause of 400 ms for a destination that asks to slow down, quick
 * retries and polls. Add DNS_SERVERS and DIRECT_MX_PORT for the loopback DNS server and receivers.
 */
export const DIRECT_TEST_SETTINGS = {
  SMTP_URL: 'direct',
  EHLO_NAME: 'out.mailroom.test',
  DIRECT_TIMEOUT_SCALE: '0.02',
  DIRECT_BACKOFF_MS: '400',
  SEND_RETRY_BASE_MS: '200',
  DISPATCH_POLL_MS: '50',
};

/**
 * The rig's receivers on loopback, standing in for the mail servers of providers. Providers: alpha
 * (mx1 on .2, mx2 on .3) hosts a.test, b.test and c.test; beta (.4) hosts beta.test; gamma (.5)
 * hosts gamma.test; .6 is a domain's own address (implicit.test, which has no MX).
 */
export const ALPHA_1 = '127.0.0.2';
export const ALPHA_2 = '127.0.0.3';
export const BETA = '127.0.0.4';
export const GAMMA = '127.0.0.5';
export const IMPLICIT = '127.0.0.6';

function serveZone(dns: TestDnsServer) {
  dns.set('mx1.alpha-mail.test', [{ type: 'A', address: ALPHA_1 }]);
  dns.set('mx2.alpha-mail.test', [{ type: 'A', address: ALPHA_2 }]);
  dns.set('mx.beta-mail.test', [{ type: 'A', address: BETA }]);
  dns.set('mx.gamma-mail.test', [{ type: 'A', address: GAMMA }]);
  for (const domain of ['a.test', 'b.test', 'c.test']) {
    dns.set(domain, [{ type: 'MX', exchange: 'mx1.alpha-mail.test', priority: 10 }, { type: 'MX', exchange: 'mx2.alpha-mail.test', priority: 20 }]);
  }
  dns.set('beta.test', [{ type: 'MX', exchange: 'mx.beta-mail.test', priority: 10 }]);
  dns.set('gamma.test', [{ type: 'MX', exchange: 'mx.gamma-mail.test', priority: 10 }]);
  // No MX: the domain's own address takes its mail.
  dns.set('implicit.test', [{ type: 'A', address: IMPLICIT }]);
  dns.set('nullmx.test', [{ type: 'MX', exchange: '', priority: 0 }]);
}

/** A server delivering straight to the receivers, through the DNS server, for one team sending from a verified domain. */
export type DirectRig = { dns: TestDnsServer; mx: MxReceivers; server: TestServer; key: string; from: string; stop(): Promise<void> };

/**
 * Starts the DNS server with the zone above, the receivers (on the addresses above, and on
 * `moreReceivers`, which a test names in DNS itself), and a server with DIRECT_TEST_SETTINGS and `env`.
 */
export async function startDirectRig(env: Record<string, string> = {}, options: { starttls?: boolean; moreReceivers?: string[] } = {}): Promise<DirectRig> {
  const addresses = [ALPHA_1, ALPHA_2, BETA, GAMMA, IMPLICIT, ...(options.moreReceivers ?? [])];
  const [dns, mx] = await Promise.all([startDnsServer(), startMxReceivers(addresses, { starttls: options.starttls })]);
  serveZone(dns);
  const server = await startTestServer({ ...DIRECT_TEST_SETTINGS, DNS_SERVERS: dns.address, DIRECT_MX_PORT: String(mx.port), ...env });
  const { apiKey: key } = await server.team('Direct');
  const domain = await verifiedDomain(server, key, 'sender.example');
  return {
    dns, mx, server, key, from: `Sender <news@${domain.name}>`,
    stop: async () => {
      await server.stop();
      await Promise.all([mx.close(), dns.close()]);
    },
  };
}

/** Sends an email from the rig's domain (subject and text filled in); answers its id. */
export async function sendDirect(rig: DirectRig, body: Record<string, unknown>): Promise<string> {
  const { emailId } = await expectOk(rig.server, rig.key, 'POST', '/v1/emails', { from: rig.from, subject: 'Hello', text: 'Hello there', ...body });
  return emailId;
}

/** The events of an email (GET /v1/emails/{id}) with this status. */
export const eventsOf = (email: { emailEvents: Array<{ status: string; data: any }> }, status: string) => email.emailEvents.filter((event) => event.status === status);

/** Every copy of an email the receivers took, told by its Message-ID. */
export const messageOf = (rig: DirectRig, emailId: string) => rig.mx.all().filter((m) => m.raw.toString('latin1').includes(`Message-ID: <${emailId}@`));
