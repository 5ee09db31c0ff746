import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { killGroup, startServerProcess } from './helpers/processes.js';
import { startProcessRig, type ProcessRig } from './helpers/process-rig.js';
import { call } from './helpers/server.js';
import { deliverRaw, type Delivery } from './helpers/smtp-client.js';
import { closedPort } from './helpers/webhook-receiver.js';

const MESSAGES = 60;

let rig: ProcessRig;

beforeEach(async () => {
  rig = await startProcessRig({ replyDelayMs: 0 });
});
afterEach(() => rig.close());

describe('inbound mail survives a kill -9', () => {
  it(`every message answered 250 before the kill is there after the restart, once; of ${MESSAGES} sent at once`, async () => {
    const port = await closedPort();
    const env = rig.env({ INBOUND_SMTP_PORT: String(port) });
    const first = await startServerProcess(env);
    const { key } = await rig.sendingTeam(first, 'inbound-crash.test');
    const route = await call(first.url, 'POST', '/v1/inbound/routes', { key, body: { match: '*@inbound-crash.test', action: 'webhook' } });
    expect(route.status, JSON.stringify(route.body)).toBe(200);

    // Eight senders at a time (the listener takes ten connections of one address), each message on a
    // connection of its own; the kill comes once a third are answered.
    const answered: string[] = [];
    let killed = false;
    let next = 0;
    const sender = async () => {
      for (let i = next++; i < MESSAGES && !killed; i = next++) {
        const subject = `Message ${i}`;
        const raw = `From: sender${i}@example.org\r\nTo: box${i}@inbound-crash.test\r\nSubject: ${subject}\r\nMessage-ID: <m${i}@example.org>\r\n\r\nBody ${i}\r\n`;
        const delivery: Delivery | null = await deliverRaw(port, { from: `sender${i}@example.org`, to: [`box${i}@inbound-crash.test`] }, raw).catch(() => null);
        if (delivery?.accepted && !killed) answered.push(subject);
        if (answered.length >= MESSAGES / 3 && !killed) {
          killed = true;
          killGroup(first.child);
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, sender));
    await first.exit;
    expect(killed, 'the kill came while messages were still arriving').toBe(true);
    expect(answered.length).toBeLessThan(MESSAGES);

    const second = await startServerProcess(env);
    const stored: string[] = [];
    for (let page = 1; ; page++) {
      const res = await call(second.url, 'GET', `/v1/inbound/emails?limit=100&page=${page}`, { key });
      stored.push(...res.body.data.map((email: { subject: string }) => email.subject));
      if (res.body.data.length < 100) break;
    }
    expect(answered.filter((subject) => !stored.includes(subject)), 'answered 250, then lost').toEqual([]);
    expect(new Set(stored).size, 'none stored twice').toBe(stored.length);
    expect((await second.stop()).code).toBe(0);
  }, 150_000);
});
