import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectApiError } from './helpers/api-error.js';
import { requestFrom } from './helpers/client-address.js';
import { roomInThisMinute } from './helpers/clock-minute.js';
import { usingPostgres } from './helpers/database.js';
import { verifiedDomain } from './helpers/domains.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { startSmtpSink, type SmtpSink } from './helpers/smtp-sink.js';
import { sleep, waitFor } from './helpers/wait.js';

const TOKEN = 'metrics-token-for-the-tests-0123456789';

type Sample = { name: string; labels: Record<string, string>; value: number };

/** The samples of a Prometheus text exposition. */
function parse(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => {
      const [, name, labels = '', value] = /^([\w:]+)(?:\{(.*)\})? (\S+)$/.exec(line)!;
      return { name: name!, labels: Object.fromEntries([...labels.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!])), value: Number(value) };
    });
}

/** The sum of the samples of `name` whose labels include `labels`; 0 when there are none. */
const sum = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((total, s) => total + s.value, 0);

async function scrape(server: Pick<TestServer, 'call'>): Promise<Sample[]> {
  const res = await server.call('GET', '/metrics', { key: TOKEN });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return parse(res.body as string);
}

describe('GET /metrics is off unless METRICS_TOKEN is set, and then answers only its bearer', () => {
  let off: TestServer;
  let on: TestServer;
  beforeAll(async () => {
    [off, on] = await Promise.all([startTestServer(), startTestServer({ METRICS_TOKEN: TOKEN })]);
  });
  afterAll(() => Promise.all([off?.stop(), on?.stop()]));

  it('without METRICS_TOKEN, /metrics is a 404 in the error shape, whatever token is sent', async () => {
    expectApiError(await off.call('GET', '/metrics'), 404, 'NOT_FOUND');
    expectApiError(await off.call('GET', '/metrics', { key: TOKEN }), 404, 'NOT_FOUND');
  });

  it('a missing, malformed or wrong token is a 401 in the error shape', async () => {
    expectApiError(await on.call('GET', '/metrics'), 401, 'UNAUTHORIZED');
    expectApiError(await on.call('GET', '/metrics', { headers: { authorization: TOKEN } }), 401, 'UNAUTHORIZED');
    expectApiError(await on.call('GET', '/metrics', { key: `${TOKEN}x` }), 401, 'UNAUTHORIZED');
    expectApiError(await on.call('GET', '/metrics', { key: TOKEN.slice(1) }), 401, 'UNAUTHORIZED');
  });

  it("every family of SPEC §11 is there, with prom-client's process metrics", async () => {
    const res = await on.call('GET', '/metrics', { key: TOKEN });
    expect(res.status).toBe(200);
    const families = [...(res.body as string).matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => `${m[1]} ${m[2]}`);
    expect(families).toEqual(expect.arrayContaining([
      'process_cpu_user_seconds_total counter',
      'nodejs_eventloop_lag_seconds gauge',
      'nodejs_heap_size_used_bytes gauge',
      'mailroom_http_requests_total counter',
      'mailroom_http_request_duration_seconds histogram',
      'mailroom_emails_total counter',
      'mailroom_queue_due gauge',
      'mailroom_queue_oldest_due_seconds gauge',
      'mailroom_smtp_send_duration_seconds histogram',
      'mailroom_smtp_replies_total counter',
      'mailroom_webhook_calls_total counter',
      'mailroom_release_batch_seconds histogram',
      'mailroom_db_pool_in_use gauge',
    ]));
  });

  // On the embedded database the scrape's own queries would wait for the transactions' one connection.
  it.runIf(usingPostgres())('mailroom_db_pool_in_use counts the connections busy at the scrape: three held by transactions, of a pool of five', async () => {
    const HELD = 3;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let begun = 0;
    const holding = Array.from({ length: HELD }, () =>
      on.deps.db.transaction().execute(async (trx) => {
        await sql`SELECT 1`.execute(trx);
        begun++;
        await released;
      }),
    );
    try {
      await waitFor('every transaction holding its connection', async () => begun, (n) => n === HELD);
      const pool = (await scrape(on)).filter((sample) => sample.name === 'mailroom_db_pool_in_use');
      expect(pool).toHaveLength(1);
      expect(pool[0]!.value).toBeGreaterThanOrEqual(HELD);
      expect(pool[0]!.value).toBeLessThanOrEqual(5);
    } finally {
      release();
      await Promise.all(holding);
    }
  });

  it('requests are labelled by route template, never by a path with ids; paths no route serves are "unmatched"', async () => {
    const { apiKey } = await on.team();
    const id = 'an-email-id-that-does-not-exist';
    expectApiError(await on.call('GET', `/v1/emails/${id}`, { key: apiKey }), 404, 'NOT_FOUND');
    expectApiError(await on.call('GET', `/v1/no-such-thing/${id}`, { key: apiKey }), 404, 'NOT_FOUND');
    expectApiError(await on.call('GET', `/elsewhere/${id}`), 404, 'NOT_FOUND');
    const samples = await scrape(on);
    expect(sum(samples, 'mailroom_http_requests_total', { method: 'GET', route: '/v1/emails/:emailId', status: '404' })).toBe(1);
    expect(sum(samples, 'mailroom_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(2);
    expect(sum(samples, 'mailroom_http_request_duration_seconds_count', { route: '/v1/emails/:emailId' })).toBe(1);
    const routes = new Set(samples.filter((s) => s.name.startsWith('mailroom_http_')).map((s) => s.labels.route));
    expect([...routes].filter((route) => route?.includes(id))).toEqual([]);
  });
});

describe('the counters move as mail goes out', () => {
  let sink: SmtpSink;
  let server: TestServer;
  let key: string;
  let from: string;
  beforeAll(async () => {
    sink = await startSmtpSink();
    server = await startTestServer({ METRICS_TOKEN: TOKEN, SMTP_URL: sink.url, DISPATCH_POLL_MS: '20' });
    key = (await server.team()).apiKey;
    from = `news@${(await verifiedDomain(server, key, 'metrics.test')).name}`;
  });
  afterAll(async () => {
    await server?.stop();
    await sink?.close();
  });

  /** Sends an email, then scrapes until it is counted `status`; answers how far a series moved meanwhile. */
  async function sendUntilCounted(to: string, status: string) {
    const before = await scrape(server);
    const res = await server.call('POST', '/v1/emails', { key, body: { from, to, subject: 'Counted', text: 'Hello' } });
    expect(res.status).toBe(200);
    const counted = (samples: Sample[]) => sum(samples, 'mailroom_emails_total', { status });
    const after = await waitFor(`the email counted ${status}`, () => scrape(server), (samples) => counted(samples) > counted(before));
    return { emailId: res.body.emailId as string, moved: (name: string, labels: Record<string, string> = {}) => sum(after, name, labels) - sum(before, name, labels) };
  }

  it('an email sent over SMTP counts QUEUED, SENT and DELIVERED, one timed hand-over and a 2xx reply', async () => {
    const { emailId, moved } = await sendUntilCounted('ada@example.com', 'DELIVERED');
    expect(sink.forEmail(emailId)).toHaveLength(1);
    expect(moved('mailroom_emails_total', { status: 'QUEUED' })).toBe(1);
    expect(moved('mailroom_emails_total', { status: 'SENT' })).toBe(1);
    expect(moved('mailroom_emails_total', { status: 'DELIVERED' })).toBe(1);
    expect(moved('mailroom_smtp_send_duration_seconds_count')).toBe(1);
    expect(moved('mailroom_smtp_send_duration_seconds_sum')).toBeGreaterThan(0);
    expect(moved('mailroom_smtp_replies_total', { class: '2xx' })).toBe(1);
    expect(moved('mailroom_http_requests_total', { method: 'POST', route: '/v1/emails', status: '200' })).toBe(1);
  });

  it('a relay refusing the message counts a 5xx reply and a BOUNCED email', async () => {
    sink.rule = { data: () => ({ code: 550, message: 'refused for the test' }) };
    try {
      const { moved } = await sendUntilCounted('bob@example.com', 'BOUNCED');
      expect(moved('mailroom_smtp_replies_total', { class: '5xx' })).toBe(1);
      expect(moved('mailroom_emails_total', { status: 'SENT' })).toBe(0);
    } finally {
      sink.rule = {};
    }
  });
});

describe('the queue gauges', () => {
  let server: TestServer;
  let key: string;
  let from: string;
  beforeAll(async () => {
    // No dispatcher in this process: what falls due stays due.
    server = await startTestServer({ METRICS_TOKEN: TOKEN, ROLE: 'api' });
    key = (await server.team()).apiKey;
    from = `news@${(await verifiedDomain(server, key, 'queue.test')).name}`;
  });
  afterAll(() => server?.stop());

  const send = async (extra: Record<string, unknown> = {}) => {
    const res = await server.call('POST', '/v1/emails', { key, body: { from, to: 'ada@example.com', subject: 'Queued', text: 'Hello', ...extra } });
    expect(res.status).toBe(200);
    return res.body.emailId as string;
  };
  /** Makes the email due `msAgo` before now; answers when that is (ms since the epoch). */
  const dueSince = async (id: string, msAgo: number) => {
    const dueAt = Date.now() - msAgo;
    await server.deps.db.updateTable('emails').set({ send_at: new Date(dueAt) }).where('id', '=', id).execute();
    return dueAt;
  };
  /** A scrape, and the oldest due's age as the gauge read it: at least `atLeastSeconds`, and no more than it was once the answer came. */
  const scrapeAged = async (dueAt: number, atLeastSeconds: number) => {
    const samples = await scrape(server);
    const scraped = Date.now();
    expect(sum(samples, 'mailroom_queue_oldest_due_seconds')).toBeGreaterThanOrEqual(atLeastSeconds);
    expect(sum(samples, 'mailroom_queue_oldest_due_seconds')).toBeLessThanOrEqual((scraped - dueAt) / 1000);
    return samples;
  };

  it('count mail that is due, not mail scheduled for later, and age the oldest due', async () => {
    const scheduled = await send({ scheduledAt: new Date(Date.now() + 86_400_000).toISOString() });
    const due = await send();
    let samples = await scrapeAged(await dueSince(due, 60_000), 60);
    expect(sum(samples, 'mailroom_queue_due')).toBe(1);

    // The scheduled email's time comes (an hour ago, say); a scrape after the cache's second sees it.
    const oldest = await dueSince(scheduled, 3_600_000);
    await sleep(1100);
    samples = await scrapeAged(oldest, 3600);
    expect(sum(samples, 'mailroom_queue_due')).toBe(2);
  });
});

describe('every role serves /metrics', () => {
  it('a ROLE=worker process, which serves no API, answers /metrics', async () => {
    const worker = await startTestServer({ METRICS_TOKEN: TOKEN, ROLE: 'worker' });
    try {
      const samples = await scrape(worker);
      expect(sum(samples, 'mailroom_queue_due')).toBe(0);
      expectApiError(await worker.call('GET', '/v1/emails'), 404, 'NOT_FOUND');
    } finally {
      await worker.stop();
    }
  });
});

describe('guessing the metrics token is throttled per client address, as guessing API keys is', () => {
  const LIMIT = 5;
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ METRICS_TOKEN: TOKEN, AUTH_FAILURES_PER_MINUTE: String(LIMIT) });
  });
  afterAll(() => server?.stop());

  const scrapeFrom = async (address: string, token?: string) => {
    const answer = await requestFrom(address, `${server.url}/metrics`, { headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });
    return { ...answer, body: answer.status === 200 ? answer.text : JSON.parse(answer.text) };
  };

  it(`after ${LIMIT} wrong or missing tokens an address gets 429 with Retry-After, even with the right token; other addresses still scrape`, async () => {
    await roomInThisMinute(15_000);
    const answers = [];
    for (let i = 0; i < LIMIT - 1; i++) answers.push(await scrapeFrom('127.0.0.61', `wrong-${i}`));
    answers.push(await scrapeFrom('127.0.0.61'));
    expect(answers.map((a) => a.status)).toEqual(Array(LIMIT).fill(401));

    const refused = await scrapeFrom('127.0.0.61', TOKEN);
    expectApiError(refused, 429, 'RATE_LIMITED');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(60);

    expect((await scrapeFrom('127.0.0.62', 'wrong')).status).toBe(401);
    expect((await scrapeFrom('127.0.0.62', TOKEN)).status).toBe(200);
  });
});
