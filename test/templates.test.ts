import PostalMime from 'postal-mime';
import { UseSend } from 'usesend-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { verifiedDomain } from './helpers/domains.js';
import { expectOk, startTestServer, type TestServer } from './helpers/server.js';
import { startSmtpSink, type SmtpSink } from './helpers/smtp-sink.js';
import { waitFor } from './helpers/wait.js';

let server: TestServer;
let sink: SmtpSink;
let key: string;
let teamId: number;
let sender: string;

beforeAll(async () => {
  sink = await startSmtpSink();
  server = await startTestServer({ SMTP_URL: sink.url, DISPATCH_POLL_MS: '20', SCHEDULE_TIMEZONE: 'Europe/Berlin' });
  ({ teamId, apiKey: key } = await server.team('Templates'));
  sender = `Acme <hello@${(await verifiedDomain(server, key, 'templates.test')).name}>`;
});
afterAll(async () => {
  await server.stop();
  await sink.close();
});

const ok = (method: string, path: string, body?: unknown, as = key) => expectOk(server, as, method, path, body);

const WELCOME = {
  name: 'Welcome',
  subject: 'Welcome, {{firstName,fallback=friend}}',
  html: '<p>Hi {{firstName}}, your plan is {{plan}}.</p>',
  text: 'Hi {{firstName}}, your plan is {{plan}}.',
};

/** The message the sink received for an email, parsed. */
async function delivered(emailId: string) {
  await waitFor(`email ${emailId} at the sink`, async () => sink.forEmail(emailId).length, (n) => n > 0);
  return PostalMime.parse(sink.forEmail(emailId)[0]!.raw);
}

describe('templates', () => {
  it('are created, read, listed, changed and deleted, each with the variables it uses', async () => {
    const created = await ok('POST', '/v1/templates', WELCOME);
    expect(created).toMatchObject({ ...WELCOME, content: null, variables: ['firstName', 'plan'] });
    expect(await ok('GET', `/v1/templates/${created.id}`)).toEqual(created);
    expect((await ok('GET', '/v1/templates')).data.map((t: { id: string }) => t.id)).toContain(created.id);

    const changed = await ok('PATCH', `/v1/templates/${created.id}`, { subject: 'Hello {{nickname}}' });
    expect(changed).toMatchObject({ subject: 'Hello {{nickname}}', html: WELCOME.html, variables: ['nickname', 'firstName', 'plan'] });
    expect(await ok('DELETE', `/v1/templates/${created.id}`)).toEqual({ id: created.id, success: true });
    expect((await server.call('GET', `/v1/templates/${created.id}`, { key })).status).toBe(404);
  });

  it('a template written in the editor gets its html rendered from the content', async () => {
    const content = JSON.stringify({ type: 'doc', content: [{ type: 'paragraph', content: [{ type: 'text', text: 'Hello ' }, { type: 'variable', attrs: { id: 'firstName', fallback: 'you' } }] }] });
    const created = await ok('POST', '/v1/templates', { name: 'Editor', subject: 'Hi', content });
    expect(created.html).toContain('Hello {{firstName,fallback=you}}');
    expect(created.variables).toEqual(['firstName']);
  });

  it('a template without a body, or with broken editor content, is refused naming the fields, and nothing is stored', async () => {
    const before = (await ok('GET', '/v1/templates')).count;
    const empty = await server.call('POST', '/v1/templates', { key, body: { name: 'Empty', subject: 'x' } });
    expect(empty.status).toBe(400);
    expect(empty.body.error.details).toEqual([{ path: 'html', message: 'is required unless text or content is given' }]);
    const broken = await server.call('POST', '/v1/templates', { key, body: { name: 'Broken', subject: 'x', content: '{"type":"nope"}' } });
    expect(broken.status).toBe(400);
    expect(broken.body.error.details[0].path).toBe('content');
    expect((await ok('GET', '/v1/templates')).count).toBe(before);
  });
});

describe('sending with a template', () => {
  it('renders subject and bodies from the variables, escaped in HTML, and the email keeps its templateId', async () => {
    const template = await ok('POST', '/v1/templates', WELCOME);
    const { emailId } = await ok('POST', '/v1/emails', {
      from: sender, to: 'ada@example.org', templateId: template.id, variables: { firstName: 'Ada <&>', plan: 'Pro' },
    });
    const email = await ok('GET', `/v1/emails/${emailId}`);
    expect(email).toMatchObject({
      templateId: template.id,
      subject: 'Welcome, Ada <&>',
      html: '<p>Hi Ada &lt;&amp;&gt;, your plan is Pro.</p>',
      text: 'Hi Ada <&>, your plan is Pro.',
    });
    const message = await delivered(emailId);
    expect(message.subject).toBe('Welcome, Ada <&>');
    expect(message.html).toContain('Hi Ada &lt;&amp;&gt;, your plan is Pro.');
    expect(message.text?.trim()).toBe('Hi Ada <&>, your plan is Pro.');
  });

  it('a placeholder with a fallback takes it when its variable is missing; without one, the missing variable is a 400 naming it', async () => {
    const template = await ok('POST', '/v1/templates', WELCOME);
    const { emailId } = await ok('POST', '/v1/emails', { from: sender, to: 'bo@example.org', templateId: template.id, variables: { firstName: '', plan: 'Free' } });
    expect((await ok('GET', `/v1/emails/${emailId}`)).subject).toBe('Welcome, friend');

    const missing = await server.call('POST', '/v1/emails', { key, body: { from: sender, to: 'cy@example.org', templateId: template.id, variables: { firstName: 'Cy' } } });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toMatchObject({ code: 'VALIDATION_ERROR', details: [{ path: 'variables.plan', message: expect.stringContaining('{{plan}}') }] });
    const batch = await server.call('POST', '/v1/emails/batch', { key, body: [{ from: sender, to: 'cy@example.org', templateId: template.id, variables: { plan: 'x', firstName: 'y' } }, { from: sender, to: 'di@example.org', templateId: template.id }] });
    expect(batch.status).toBe(400);
    expect(batch.body.error.details.map((d: { path: string }) => d.path)).toEqual(['[1].variables.firstName', '[1].variables.plan']);
  });

  it('an unknown or another team\'s template is a 404, mixing templateId with html or text a 400, and nothing is stored', async () => {
    const other = await server.team('Other');
    const theirs = await ok('POST', '/v1/templates', WELCOME, other.apiKey);
    const count = async () => (await ok('GET', '/v1/emails?limit=100')).count;
    const before = await count();
    for (const templateId of ['no-such-template', theirs.id]) {
      const res = await server.call('POST', '/v1/emails', { key, body: { from: sender, to: 'ed@example.org', templateId, variables: { firstName: 'Ed', plan: 'x' } } });
      expect(res.status, templateId).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
      expect(JSON.stringify(res.body)).not.toContain(theirs.subject);
    }
    const mine = await ok('POST', '/v1/templates', WELCOME);
    const mixed = await server.call('POST', '/v1/emails', { key, body: { from: sender, to: 'ed@example.org', templateId: mine.id, variables: { firstName: 'Ed', plan: 'x' }, html: '<p>x</p>' } });
    expect(mixed.status).toBe(400);
    expect(mixed.body.error.details[0].path).toBe('html');
    expect(await count()).toBe(before);
    expect((await server.call('GET', `/v1/templates/${theirs.id}`, { key })).status).toBe(404);
    expect((await server.call('PATCH', `/v1/templates/${theirs.id}`, { key, body: { name: 'Mine now' } })).status).toBe(404);
    expect((await server.call('DELETE', `/v1/templates/${theirs.id}`, { key })).status).toBe(404);
    expect(await ok('GET', `/v1/templates/${theirs.id}`, undefined, other.apiKey)).toEqual(theirs);
  });

  it('a key scoped to a domain sends with the team\'s templates but cannot change them', async () => {
    const domain = await ok('GET', '/v1/domains');
    const scoped = await server.key(teamId, 'full', domain[0].id);
    const template = await ok('POST', '/v1/templates', WELCOME);
    await ok('POST', '/v1/emails', { from: sender, to: 'fay@example.org', templateId: template.id, variables: { firstName: 'Fay', plan: 'x' } }, scoped);
    expect((await server.call('PATCH', `/v1/templates/${template.id}`, { key: scoped, body: { name: 'x' } })).status).toBe(403);
    expect((await server.call('DELETE', `/v1/templates/${template.id}`, { key: scoped })).status).toBe(403);
    expect((await server.call('POST', '/v1/templates', { key: scoped, body: WELCOME })).status).toBe(403);
  });

  it('usesend-js emails.send({ templateId, variables }) reaches the SMTP sink rendered', async () => {
    const template = await ok('POST', '/v1/templates', WELCOME);
    const client = new UseSend(key, server.url);
    const sent = await client.emails.send({ from: sender, to: 'gus@example.org', templateId: template.id, variables: { firstName: 'Gus', plan: 'Team' } });
    expect(sent.error).toBeNull();
    const message = await delivered(sent.data!.emailId!);
    expect(message.subject).toBe('Welcome, Gus');
    expect(message.html).toContain('Hi Gus, your plan is Team.');
  });
});

describe('replies and the clients\' natural inputs', () => {
  it('inReplyToId puts the reply in the thread: In-Reply-To and References at the sink; an unknown id is a 404', async () => {
    const first = await ok('POST', '/v1/emails', { from: sender, to: 'hal@example.org', subject: 'Question', text: 'Hi' });
    const reply = await ok('POST', '/v1/emails', { from: sender, to: 'hal@example.org', subject: 'Re: Question', text: 'Answer', inReplyToId: first.emailId });
    const again = await ok('POST', '/v1/emails', { from: sender, to: 'hal@example.org', subject: 'Re: Question', text: 'More', inReplyToId: reply.emailId });
    const firstId = `<${first.emailId}@templates.test>`;
    const replyId = `<${reply.emailId}@templates.test>`;
    const answer = await delivered(reply.emailId);
    expect(answer.inReplyTo).toBe(firstId);
    expect(answer.references).toBe(firstId);
    const third = await delivered(again.emailId);
    expect(third.inReplyTo).toBe(replyId);
    expect(third.references).toBe(`${firstId} ${replyId}`);

    const unknown = await server.call('POST', '/v1/emails', { key, body: { from: sender, to: 'hal@example.org', subject: 'Re', text: 'x', inReplyToId: 'no-such-email' } });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('NOT_FOUND');
    // null, as the typed clients may send it, is no reply.
    await ok('POST', '/v1/emails', { from: sender, to: 'hal@example.org', subject: 'New', text: 'x', inReplyToId: null });
  });

  it("Python's datetime.isoformat() is taken for scheduledAt: microseconds and +00:00, and a naive time read in SCHEDULE_TIMEZONE", async () => {
    const at = new Date(Date.now() + 3 * 86_400_000);
    at.setUTCHours(12, 0, 0, 0);
    const day = at.toISOString().slice(0, 10);
    const aware = await ok('POST', '/v1/emails', { from: sender, to: 'ivy@example.org', subject: 'Later', text: 'x', scheduledAt: `${day}T12:00:00.123456+00:00` });
    expect((await ok('GET', `/v1/emails/${aware.emailId}`)).scheduledAt).toBe(`${day}T12:00:00.123Z`);
    // Europe/Berlin is UTC+1 in winter and UTC+2 in summer: 13:00 there is 12:00 or 11:00 UTC.
    const naive = await ok('POST', '/v1/emails', { from: sender, to: 'ivy@example.org', subject: 'Later', text: 'x', scheduledAt: `${day}T13:00:00.500000` });
    const berlinOffset = new Intl.DateTimeFormat('en-US', { timeZone: 'Europe/Berlin', timeZoneName: 'shortOffset' }).formatToParts(at).find((p) => p.type === 'timeZoneName')!.value;
    const expected = berlinOffset === 'GMT+2' ? `${day}T11:00:00.500Z` : `${day}T12:00:00.500Z`;
    expect((await ok('GET', `/v1/emails/${naive.emailId}`)).scheduledAt).toBe(expected);
    const patched = await ok('PATCH', `/v1/emails/${naive.emailId}`, { scheduledAt: `${day} 14:30:00` });
    expect(patched).toEqual({ emailId: naive.emailId });
  });

  it('to is taken as a string or a list, in single sends and batches alike', async () => {
    const single = await ok('POST', '/v1/emails', { from: sender, to: ['jo@example.org', 'kay@example.org'], subject: 'Hi', text: 'x' });
    expect((await ok('GET', `/v1/emails/${single.emailId}`)).to).toBe('jo@example.org, kay@example.org');
    const batch = await ok('POST', '/v1/emails/batch', [
      { from: sender, to: 'lu@example.org', subject: 'Hi', text: 'x' },
      { from: sender, to: ['mo@example.org'], subject: 'Hi', text: 'x' },
    ]);
    expect(batch.data).toHaveLength(2);
  });
});
