import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AllowList, checkWebhookUrl, PortList, systemLookup, type Lookup } from '../src/webhooks/address-guard.js';
import { parseRetryAfter, WebhookPoster } from '../src/webhooks/post.js';
import { startDnsServer } from './helpers/dns-server.js';
import { waitFor } from './helpers/wait.js';

/** A webhook receiver on loopback that counts what reaches it. */
type Receiver = {
  url: string;
  port: number;
  /** TCP connections accepted, and how many of them have closed. */
  connections: number;
  closed: number;
  requests: { url: string; headers: http.IncomingHttpHeaders; body: string }[];
  close(): Promise<void>;
};

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiver(answer: (request: http.IncomingMessage, response: http.ServerResponse) => void): Promise<Receiver> {
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      state.requests.push({ url: request.url ?? '', headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      answer(request, response);
    });
  });
  server.on('connection', (socket: Socket) => {
    state.connections++;
    socket.on('close', () => state.closed++);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  const state: Receiver = {
    url: `http://127.0.0.1:${port}`,
    port,
    connections: 0,
    closed: 0,
    requests: [],
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  cleanups.push(() => state.close());
  return state;
}

const loopbackAllowed = new AllowList(['127.0.0.1']);
const noLookup: Lookup = async (host) => {
  throw Object.assign(new Error(`no DNS in this test: ${host}`), { code: 'ENOTFOUND' });
};

function poster(options: Partial<ConstructorParameters<typeof WebhookPoster>[0]> = {}) {
  const made = new WebhookPoster({ allow: loopbackAllowed, lookup: noLookup, timeoutMs: 5000, ...options });
  cleanups.push(() => made.close());
  return made;
}

const headers = { 'Content-Type': 'application/json', 'User-Agent': 'Mailroom-Webhooks/1' };
const body = JSON.stringify({ type: 'email.delivered', data: { id: 'e1' } });

describe('delivering a webhook call', () => {
  it('a 2xx is delivered, and one kept-alive connection carries the calls that follow', async () => {
    const hook = await receiver((_request, response) => response.writeHead(204).end());
    const post = poster();
    for (let i = 0; i < 5; i++) {
      expect(await post.post(`${hook.url}/hook`, headers, body)).toMatchObject({ ok: true, status: 204 });
    }
    expect(hook.requests).toHaveLength(5);
    expect(hook.requests[0]).toMatchObject({ url: '/hook', body, headers: { 'content-type': 'application/json', 'user-agent': 'Mailroom-Webhooks/1' } });
    expect(hook.connections).toBe(1);
  });

  it('a redirect is not followed', async () => {
    const elsewhere = await receiver((_request, response) => response.end('ok'));
    const hook = await receiver((_request, response) => response.writeHead(302, { Location: `${elsewhere.url}/landing` }).end());
    const result = await poster().post(hook.url, headers, body);
    expect(result).toMatchObject({ ok: false, status: 302, error: `redirect to ${elsewhere.url}/landing not followed`, gone: false });
    expect(elsewhere.connections).toBe(0);
  });

  it('410 Gone reports the webhook gone', async () => {
    const hook = await receiver((_request, response) => response.writeHead(410).end('no such hook'));
    expect(await poster().post(hook.url, headers, body)).toMatchObject({ ok: false, status: 410, error: 'HTTP 410: no such hook', gone: true });
  });

  it('429 with Retry-After: 7 asks to wait 7 seconds', async () => {
    const hook = await receiver((_request, response) => response.writeHead(429, { 'Retry-After': '7' }).end());
    expect(await poster().post(hook.url, headers, body)).toMatchObject({ ok: false, status: 429, error: 'HTTP 429', retryAfterMs: 7000, gone: false });
  });

  it('503 with a Retry-After date asks to wait until then; other statuses carry no wait', async () => {
    let answering = 0;
    let until = 0;
    const hook = await receiver((request, response) => {
      answering = Date.now();
      const date = new Date(answering + 60_000).toUTCString();
      until = Date.parse(date);
      if (request.url === '/503') response.writeHead(503, { 'Retry-After': date }).end();
      else response.writeHead(500, { 'Retry-After': '7' }).end('database\r\ndown');
    });
    const post = poster();
    const unavailable = await post.post(`${hook.url}/503`, headers, body);
    const answered = Date.now();
    expect(unavailable).toMatchObject({ ok: false, status: 503, error: 'HTTP 503', gone: false });
    // Until that date, from the moment the answer was read: between the receiver's answer and ours.
    const retryAfterMs = unavailable.ok ? null : unavailable.retryAfterMs;
    expect(retryAfterMs).toBeGreaterThanOrEqual(until - answered);
    expect(retryAfterMs).toBeLessThanOrEqual(until - answering);
    expect(await post.post(`${hook.url}/500`, headers, body)).toMatchObject({ ok: false, status: 500, error: 'HTTP 500: database down', retryAfterMs: null });
  });

  it('a Retry-After is read as seconds or an HTTP date, at most a day, and ignored when unreadable', () => {
    const now = Date.parse('2025-06-01T12:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('Sun, 01 Jun 2025 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 01 Jun 2025 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('99999999', now)).toBe(86_400_000);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter('-5', now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
  });

  it('a receiver that never answers times out, and its connection is closed', async () => {
    const hook = await receiver(() => {});
    const result = await poster({ timeoutMs: 300 }).post(hook.url, headers, body);
    expect(result).toMatchObject({ ok: false, status: null, error: 'timed out after 300 ms' });
    // The attempt took the whole limit, however early the timer fired by the clock.
    expect(result.timeMs).toBeGreaterThanOrEqual(300);
    await waitFor('the receiver sees its connection closed', async () => hook.closed, (closed) => closed === 1);
  });

  it('a closed port is a refused connection', async () => {
    const gone = await receiver(() => {});
    await gone.close();
    expect(await poster().post(gone.url, headers, body)).toMatchObject({ ok: false, status: null, error: 'connection refused (ECONNREFUSED)' });
  });

  it('a huge response body is not read beyond the cap: the connection is closed instead', async () => {
    const total = 50 * 1024 * 1024;
    let written = 0;
    const hook = await receiver((_request, response) => {
      response.writeHead(500, { 'Content-Length': String(total) });
      const chunk = Buffer.alloc(64 * 1024, 'x');
      const more = () => {
        while (written < total && !response.destroyed) {
          written += chunk.length;
          if (!response.write(chunk)) return void response.once('drain', () => setTimeout(more, 1));
        }
      };
      more();
    });
    const result = await poster().post(hook.url, headers, body);
    expect(result).toMatchObject({ ok: false, status: 500 });
    expect(result.ok || result.error).toBe(`HTTP 500: ${'x'.repeat(200)}`);
    await waitFor('the receiver sees its connection closed', async () => hook.closed, (closed) => closed === 1);
    expect(written).toBeLessThan(total);
  });
});

describe('the guard at delivery', () => {
  it('a URL whose host is a loopback IP is refused without a connection', async () => {
    const hook = await receiver((_request, response) => response.end());
    const post = poster({ allow: new AllowList([]) });
    expect(await post.post(`${hook.url}/hook`, headers, body)).toMatchObject({ ok: false, status: null, error: '127.0.0.1 is a loopback address' });
    expect(await post.post(`http://[::ffff:127.0.0.1]:${hook.port}/hook`, headers, body)).toMatchObject({
      ok: false,
      status: null,
      error: '::ffff:7f00:1 is an IPv4-mapped form of 127.0.0.1, a loopback address',
    });
    expect(hook.connections).toBe(0);
  });

  it('a port the operator closed after the webhook was saved is refused without a connection', async () => {
    const hook = await receiver((_request, response) => response.end());
    const post = poster({ allow: new AllowList([]), lookup: async () => ['127.0.0.1'], ports: new PortList(['80', '443']) });
    expect(await post.post(`http://hooks.example.test:${hook.port}/hook`, headers, body)).toMatchObject({
      ok: false,
      status: null,
      error: `port ${hook.port} may not be called by webhooks (WEBHOOK_ALLOWED_PORTS is 80,443)`,
    });
    expect(hook.connections).toBe(0);
  });

  it('a host name that resolves to loopback is refused without a connection', async () => {
    const hook = await receiver((_request, response) => response.end());
    const lookup: Lookup = async (host) => (host === 'rebind.test' ? ['127.0.0.1'] : []);
    const result = await poster({ allow: new AllowList([]), lookup }).post(`http://rebind.test:${hook.port}/hook`, headers, body);
    expect(result).toMatchObject({ ok: false, status: null, error: 'rebind.test resolves to 127.0.0.1, a loopback address' });
    expect(hook.connections).toBe(0);
  });

  it('an allowed address is called, at the address the lookup gave, looked up once per connection', async () => {
    const hook = await receiver((_request, response) => response.end());
    const looked: string[] = [];
    const lookup: Lookup = async (host) => {
      looked.push(host);
      return host === 'rebind.test' ? ['127.0.0.1'] : [];
    };
    const post = poster({ allow: new AllowList(['127.0.0.1']), lookup });
    expect(await post.post(`http://rebind.test:${hook.port}/hook`, headers, body)).toMatchObject({ ok: true, status: 200 });
    expect(await post.post(`http://rebind.test:${hook.port}/hook`, headers, body)).toMatchObject({ ok: true, status: 200 });
    expect(hook.requests.map((request) => request.headers.host)).toStrictEqual([`rebind.test:${hook.port}`, `rebind.test:${hook.port}`]);
    expect(looked).toStrictEqual(['rebind.test']);
    expect(hook.connections).toBe(1);
  });

  it('a host that re-points at loopback after its URL was checked is refused at delivery (DNS rebinding)', async () => {
    const hook = await receiver((_request, response) => response.end());
    let answers = 0;
    // Public for the check, loopback a moment later, as a rebinding attacker's DNS answers.
    const lookup: Lookup = async () => (answers++ === 0 ? ['93.184.216.34'] : ['127.0.0.1']);
    const guard = { allow: new AllowList([]), lookup };
    const url = `http://rebind.test:${hook.port}/hook`;
    expect((await checkWebhookUrl(url, guard)).ok).toBe(true);
    expect(await poster(guard).post(url, headers, body)).toMatchObject({ ok: false, error: 'rebind.test resolves to 127.0.0.1, a loopback address' });
    expect(hook.connections).toBe(0);
  });
});

describe('looking up webhook hosts on the configured DNS servers', () => {
  it('A and AAAA answers are united, and the guard judges every one of them', async () => {
    const dns = await startDnsServer();
    cleanups.push(() => dns.close());
    dns.set('hook.example.test', [{ type: 'A', address: '127.0.0.1' }]);
    dns.set('dual.example.test', [
      { type: 'A', address: '93.184.216.34' },
      { type: 'AAAA', address: '::1' },
    ]);
    const lookup = systemLookup({ dnsServers: [dns.address], dnsTimeoutMs: 2000 });

    expect(await lookup('hook.example.test')).toStrictEqual(['127.0.0.1']);
    expect(await lookup('dual.example.test')).toStrictEqual(['93.184.216.34', '::1']);
    await expect(lookup('nosuch.example.test')).rejects.toMatchObject({ code: 'ENOTFOUND' });

    expect(await checkWebhookUrl('http://hook.example.test/x', { allow: new AllowList([]), lookup })).toStrictEqual({
      ok: false,
      reason: "hook.example.test resolves to 127.0.0.1, a loopback address; the server's operator can allow it by adding hook.example.test to WEBHOOK_ALLOWED_HOSTS",
    });
    expect(await checkWebhookUrl('http://dual.example.test/x', { allow: new AllowList([]), lookup })).toStrictEqual({
      ok: false,
      reason: "dual.example.test resolves to ::1, a loopback address; the server's operator can allow it by adding dual.example.test to WEBHOOK_ALLOWED_HOSTS",
    });
    expect((await checkWebhookUrl('http://hook.example.test/x', { allow: new AllowList(['127.0.0.1']), lookup })).ok).toBe(true);
  });

  it('a call to an allowed host reaches it through the configured DNS servers', async () => {
    const dns = await startDnsServer();
    cleanups.push(() => dns.close());
    dns.set('hook.example.test', [{ type: 'A', address: '127.0.0.1' }]);
    const hook = await receiver((_request, response) => response.end());
    const post = poster({ allow: new AllowList(['127.0.0.1']), lookup: systemLookup({ dnsServers: [dns.address], dnsTimeoutMs: 2000 }) });
    expect(await post.post(`http://hook.example.test:${hook.port}/x`, headers, body)).toMatchObject({ ok: true, status: 200 });
    expect(hook.requests).toHaveLength(1);
  });
});
