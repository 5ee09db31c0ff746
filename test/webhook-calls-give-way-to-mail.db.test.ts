import { afterAll, beforeAll, expect, it } from 'vitest';
import { startWebhookSender, type WebhookSender } from '../src/webhooks/sender.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { sleep } from './helpers/wait.js';
import { startWebhookReceiver, type WebhookReceiver } from './helpers/webhook-receiver.js';

// ROLE=api: no dispatcher runs; the test plays its part by emitting the signal a dispatcher
// emits while it has batches in flight, to a sender started by hand.
let server: TestServer;
let receiver: WebhookReceiver;
let sender: WebhookSender;
let key: string;

beforeAll(async () => {
  server = await startTestServer({ ROLE: 'api', WEBHOOK_POLL_MS: '50' });
  receiver = await startWebhookReceiver();
  ({ apiKey: key } = await server.team());
  sender = startWebhookSender(server.deps);
});
afterAll(async () => {
  await sender.stop();
  await receiver.close();
  await server.stop();
});

it('no webhook call goes out while mail is being sent, and the held calls go once the run ends', async () => {
  const hook = await server.call('POST', '/v1/webhooks', { key, body: { url: `http://127.0.0.1:${receiver.port}/hook` } });
  expect(hook.status).toBe(200);
  server.deps.signals.emit('dispatching', true);
  try {
    expect((await server.call('POST', `/v1/webhooks/${hook.body.id}/test`, { key })).status).toBe(200);
    await sleep(1_500);
    expect(receiver.received, 'a call went out while mail was being sent').toHaveLength(0);
  } finally {
    server.deps.signals.emit('dispatching', false);
  }
  const [call] = await receiver.waitFor('the held test call', (received) => received.length === 1);
  expect(call!.json.type).toBe('webhook.test');
});
