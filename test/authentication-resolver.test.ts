import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { authenticationResolver } from '../src/inbound/authenticate.js';
import { RCODE, startDnsServer, type TestDnsServer } from './helpers/dns-server.js';

let dns: TestDnsServer;
beforeAll(async () => {
  dns = await startDnsServer();
  dns.set('sender.test', [{ type: 'TXT', value: 'v=spf1 ip4:192.0.2.1 -all' }]);
});
afterAll(() => dns.close());
afterEach(() => vi.useRealTimers());

const asked = (question: string) => dns.queries.filter((query) => query === question).length;

describe('the DNS answers authentication asks for', () => {
  it('an answer is reused for 30 seconds, then asked for again, and a change is seen from then on', async () => {
    // Only the clock the answers are dated by: the resolver's own timeouts run as they are.
    vi.useFakeTimers({ toFake: ['Date'] });
    const resolve = authenticationResolver([dns.address], 2_000);
    const before = asked('TXT sender.test');
    const [first, second] = await Promise.all([resolve('sender.test', 'TXT'), resolve('Sender.TEST', 'TXT')]);
    expect(first).toEqual([['v=spf1 ip4:192.0.2.1 -all']]);
    expect(second).toEqual(first);
    vi.setSystemTime(Date.now() + 29_990);
    expect(await resolve('sender.test', 'TXT')).toEqual(first);
    expect(asked('TXT sender.test') - before, 'one question on the wire for three asks within 30 s').toBe(1);

    dns.set('sender.test', [{ type: 'TXT', value: 'v=spf1 -all' }]);
    vi.setSystemTime(Date.now() + 10);
    expect(await resolve('sender.test', 'TXT')).toEqual([['v=spf1 -all']]);
    expect(asked('TXT sender.test') - before).toBe(2);
    dns.set('sender.test', [{ type: 'TXT', value: 'v=spf1 ip4:192.0.2.1 -all' }]);
  });

  it('that a name does not exist is an answer, kept as one; a failing server is asked again next time', async () => {
    const resolve = authenticationResolver([dns.address], 2_000);
    await expect(resolve('_dmarc.nowhere.test', 'TXT')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    await expect(resolve('_dmarc.nowhere.test', 'TXT')).rejects.toMatchObject({ code: 'ENOTFOUND' });
    expect(asked('TXT _dmarc.nowhere.test')).toBe(1);

    dns.failWith(RCODE.SERVFAIL);
    try {
      await expect(resolve('broken.test', 'TXT')).rejects.toMatchObject({ code: 'ESERVFAIL' });
    } finally {
      dns.failWith(null);
    }
    dns.set('broken.test', [{ type: 'TXT', value: 'v=spf1 -all' }]);
    expect(await resolve('broken.test', 'TXT')).toEqual([['v=spf1 -all']]);
  });
});
