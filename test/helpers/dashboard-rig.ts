import type { Browser } from 'playwright-core';
import { launchBrowser, signedIn, watchDialogs, type SignedIn } from './browser.js';
import type { TestDnsServer } from './dns-server.js';
import { startServerWithDns, verifiedDomain } from './domains.js';
import type { TestServer } from './server.js';
import { startSmtpSink, type SmtpSink } from './smtp-sink.js';

export type DashboardRig = {
  dns: TestDnsServer;
  server: TestServer;
  sink: SmtpSink;
  key: string;
  teamId: number;
  /** A sender on the team's verified domain, `Name <local@domain>`. */
  from: string;
  browser: Browser;
  person: SignedIn;
  /** The texts of the dialogs the person's page opened. */
  dialogs: string[];
  stop(): Promise<void>;
};

/**
 * What the dashboard tests of mail share: an SMTP sink, a browser, a server sending to the sink
 * whose team has a domain verified through a loopback DNS server, and a person signed in.
 */
export async function startDashboardRig(options: { domain: string; sender: string; env?: Record<string, string> }): Promise<DashboardRig> {
  const [sink, browser] = await Promise.all([startSmtpSink(), launchBrowser()]);
  const { dns, server, key, teamId, stop } = await startServerWithDns({ SMTP_URL: sink.url, DISPATCH_POLL_MS: '20', ...options.env });
  const domain = await verifiedDomain(server, key, options.domain);
  dns.serve(domain);
  const person = await signedIn(browser, server, teamId);
  return {
    dns, server, sink, key, teamId, browser, person,
    from: `${options.sender} <${options.sender.toLowerCase()}@${domain.name}>`,
    dialogs: watchDialogs(person.page),
    stop: async () => {
      await browser.close();
      await stop();
      await sink.close();
    },
  };
}
