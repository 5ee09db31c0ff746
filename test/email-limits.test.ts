import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_BODY_CHARS } from '../src/services/email-body.js';
import { expectApiError } from './helpers/api-error.js';
import { verifiedDomain } from './helpers/domains.js';
import { startTestServer, type TestServer } from './helpers/server.js';
import { queuedId, SubmissionClient } from './helpers/submission-client.js';

/**
 * An email has one set of limits, whichever door it comes in by: POST /v1/emails refuses a body
 * over one of them with 400 naming it, and SMTP submission refuses the same email with the same
 * words, 552 for a content over its limit (550 for too many recipients, which RFC 5321 forbids
 * answering 552). A message SMTP took past them was stored and turned to text on the event loop:
 * 9.4 MB of html held it for seconds.
 */

let server: TestServer;
let key: string;
let from: string;

beforeAll(async () => {
  server = await startTestServer({ ROLE: 'api' }, { submission: true });
  ({ apiKey: key } = await server.team('Limits'));
  from = `app@${(await verifiedDomain(server, key, 'limits.test')).name}`;
});
afterAll(() => server?.stop());

const emailCount = async () => (await server.call('GET', '/v1/emails?limit=1', { key })).body.count as number;
const recipients = (count: number) => Array.from({ length: count }, (_, i) => `reader${i}@example.org`);
const composed = async (fields: Mail.Options) => (await new MailComposer({ from, to: 'reader@example.org', subject: 'Limits', html: '<p>Hi</p>', ...fields }).compile().build()).toString();

async function submitted(message: string, to = ['reader@example.org']) {
  const client = await SubmissionClient.connect(server.submissionPort!);
  await client.secureHello();
  expect((await client.authPlain(key)).code).toBe(235);
  const reply = await client.send(from, to, message);
  await client.quit();
  return reply;
}

describe('one set of limits for an email, whichever door it comes in by', () => {
  // Each: what goes past a limit, as the API's body fields and as the message's, and SMTP's reply code.
  const overLimits: [string, Record<string, unknown>, Mail.Options, number][] = [
    [`html over ${MAX_BODY_CHARS} characters`, { html: 'x'.repeat(MAX_BODY_CHARS + 1_000_000) }, { html: 'x'.repeat(MAX_BODY_CHARS + 1_000_000) }, 552],
    [`text over ${MAX_BODY_CHARS} characters`, { text: 'x'.repeat(MAX_BODY_CHARS + 1) }, { text: 'x'.repeat(MAX_BODY_CHARS + 1) }, 552],
    ['a subject over 998 characters', { subject: 's'.repeat(999) }, { subject: 's'.repeat(999) }, 552],
    [
      'more than 10 attachments',
      { attachments: Array.from({ length: 11 }, (_, i) => ({ filename: `${i}.txt`, content: Buffer.from('a').toString('base64') })) },
      { attachments: Array.from({ length: 11 }, (_, i) => ({ filename: `${i}.txt`, content: 'a' })) },
      552,
    ],
    ['more than 50 header fields', { headers: Object.fromEntries(recipients(51).map((_, i) => [`X-Field-${i}`, 'x'])) }, { headers: Object.fromEntries(recipients(51).map((_, i) => [`X-Field-${i}`, 'x'])) }, 552],
    ['a header field over 900 characters', { headers: { 'X-Long': 'v '.repeat(451) } }, { headers: { 'X-Long': 'v '.repeat(451) } }, 552],
    ['more than 50 recipients in To', { to: recipients(51) }, { to: recipients(51) }, 550],
  ];

  it.each(overLimits)('%s: the API answers 400 naming the limit, SMTP submission refuses it in the same words, and neither stores it', async (_what, body, fields, code) => {
    const before = await emailCount();
    const api = await server.call('POST', '/v1/emails', { key, body: { from, to: 'reader@example.org', subject: 'Limits', html: '<p>Hi</p>', ...body } });
    expectApiError(api, 400, 'VALIDATION_ERROR');
    expect(api.body.error.details).toHaveLength(1);
    const [{ path, message }] = api.body.error.details;
    expect(message).toMatch(/at most \d+/);

    const reply = await submitted(await composed(fields), Array.isArray(fields.to) ? (fields.to as string[]) : ['reader@example.org']);
    expect(reply.code, reply.text).toBe(code);
    expect(reply.text).toContain(`${path}: ${message}`);
    expect(await emailCount()).toBe(before);
  });

  it('an email within every limit is taken by both doors', async () => {
    const html = `<p>${'x'.repeat(MAX_BODY_CHARS - 100_000)}</p>`;
    const before = await emailCount();
    const api = await server.call('POST', '/v1/emails', { key, body: { from, to: 'reader@example.org', subject: 's'.repeat(998), html } });
    expect(api.status, JSON.stringify(api.body).slice(0, 300)).toBe(200);
    queuedId(await submitted(await composed({ subject: 's'.repeat(998), html })));
    expect(await emailCount()).toBe(before + 2);
  });
});
