import { expect } from 'vitest';
import type { TestServer } from './server.js';

export const statusesOf = (email: { emailEvents: { status: string }[] }) => email.emailEvents.map((event) => event.status);

/** Polls GET /v1/emails/{id} until the email satisfies the predicate; fails after the timeout. */
export async function waitForEmail(
  server: Pick<TestServer, 'call'>,
  key: string,
  id: string,
  predicate: (email: any) => boolean,
  timeoutMs = 10_000,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { status, body } = await server.call('GET', `/v1/emails/${id}`, { key });
    expect(status).toBe(200);
    if (predicate(body)) return body;
    if (Date.now() > deadline) throw new Error(`email ${id} never reached the expected state; last seen: ${JSON.stringify(body)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/** Done with sending: nothing more will happen to it without outside feedback. */
export const settled = (email: { latestStatus: string }) => !['QUEUED', 'SCHEDULED', 'DELIVERY_DELAYED'].includes(email.latestStatus);
