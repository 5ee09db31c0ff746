import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startMxReceivers, type MxReceivers } from './helpers/mx-receivers.js';
import { killGroup, startServerProcess } from './helpers/processes.js';
import { IN_FLIGHT_BOUND, RECOVERY_MS, startProcessRig, type ProcessRig } from './helpers/process-rig.js';
import { call } from './helpers/server.js';
import { messageIdOf } from './helpers/smtp-sink.js';
import { waitFor } from './helpers/wait.js';

const TOTAL = 600;
// Three providers on three loopback addresses; each domain's mail goes to its provider's one MX.
const PROVIDERS = [
  { address: '127.0.0.2', host: 'mx.one-mail.test', domains: ['a.test', 'b.test'] },
  { address: '127.0.0.3', host: 'mx.two-mail.test', domains: ['c.test'] },
  { address: '127.0.0.4', host: 'mx.three-mail.test', domains: ['d.test', 'e.test'] },
];
const DOMAINS = PROVIDERS.flatMap((p) => p.domains);

let rig: ProcessRig;
let mx: MxReceivers;

beforeEach(async () => {
  rig = await startProcessRig({ replyDelayMs: 3 });
  mx = await startMxReceivers(PROVIDERS.map((p) => p.address));
  for (const receiver of mx.receivers) receiver.behaviour = { replyDelayMs: 3 };
  for (const provider of PROVIDERS) {
    rig.dns.set(provider.host, [{ type: 'A', address: provider.address }]);
    for (const domain of provider.domains) rig.dns.set(domain, [{ type: 'MX', exchange: provider.host, priority: 10 }]);
  }
});
afterEach(async () => {
  await rig.close();
  await mx.close();
});

const directEnv = () => rig.env({ SMTP_URL: 'direct', DIRECT_MX_PORT: String(mx.port), EHLO_NAME: 'out.mailroom.test', DIRECT_MAX_CONNECTIONS: '3' });

describe('direct delivery survives a kill -9', () => {
  it(`every one of ${TOTAL} emails to five domains at three providers arrives, none lost, only mail in flight at the kill twice, all within ${RECOVERY_MS / 1000} s of the restart`, async () => {
    const first = await startServerProcess(directEnv());
    const { key, from } = await rig.sendingTeam(first, 'crash.test');
    const ids: string[] = [];
    for (let batch = 0; batch < TOTAL / 100; batch++) {
      const body = Array.from({ length: 100 }, (_, i) => {
        const n = batch * 100 + i;
        return { from, to: `r${n}@${DOMAINS[n % DOMAINS.length]}`, subject: `Mail ${n}`, text: 'Hello' };
      });
      const res = await call(first.url, 'POST', '/v1/emails/batch', { key, body });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      ids.push(...res.body.data.map((d: { emailId: string }) => d.emailId));
    }
    await waitFor('delivery under way', async () => mx.all().length, (n) => n >= 150, 30_000);
    killGroup(first.child);
    await first.exit;
    const atKill = mx.all().length;
    expect(atKill, 'the kill came while mail was still going out').toBeLessThan(TOTAL);

    const second = await startServerProcess(directEnv());
    const delivered = async () => (await call(second.url, 'GET', '/v1/emails?status=DELIVERED&limit=1', { key })).body.count;
    await waitFor(`all ${TOTAL} DELIVERED`, delivered, (count) => count === TOTAL, RECOVERY_MS);
    expect((await second.stop()).code).toBe(0);
    await waitFor('every session closed', async () => mx.receivers.reduce((n, r) => n + r.openSessions(), 0), (n) => n === 0, 30_000);

    const copies = new Map<string, number>();
    for (const message of mx.all()) {
      const id = messageIdOf(message.raw)!.split('@')[0]!;
      copies.set(id, (copies.get(id) ?? 0) + 1);
    }
    expect(ids.filter((id) => !copies.has(id)), 'emails never delivered').toEqual([]);
    const extra = [...copies.values()].reduce((sum, n) => sum + n - 1, 0);
    console.info(`direct delivery, kill -9 after ${atKill} of ${TOTAL} arrived: ${extra} arrived twice (bound ${IN_FLIGHT_BOUND})`);
    expect(Math.max(...copies.values())).toBeLessThanOrEqual(2);
    expect(extra).toBeLessThanOrEqual(IN_FLIGHT_BOUND);
    // Each went to its own provider.
    for (const provider of PROVIDERS) {
      expect(mx.byAddress(provider.address).received.every((m) => provider.domains.includes(m.rcptTo[0]!.split('@')[1]!))).toBe(true);
    }
  }, 150_000);
});
