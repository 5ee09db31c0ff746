import PostalMime from 'postal-mime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectApiError } from './helpers/api-error.js';
import { feedbackTeam, startFeedbackServer, type FeedbackTeam } from './helpers/feedback.js';
import { waitFor } from './helpers/wait.js';

/**
 * Segments on real parts: the filters run as SQL on the database, engagement comes from real
 * opens and clicks (the tracking pixel and links fetched over HTTP) and a real SMTP refusal, and
 * campaigns go through the releaser and dispatcher to a loopback SMTP sink.
 */

let env: Awaited<ReturnType<typeof startFeedbackServer>>;
let team: FeedbackTeam;

beforeAll(async () => {
  env = await startFeedbackServer();
  team = await feedbackTeam(env.server, env.sink, 'segments.test');
  await team.ok('PATCH', `/v1/domains/${team.domain.id}`, { openTracking: true, clickTracking: true });
  env.sink.rule = { rcpt: (address) => (address.startsWith('gone') ? { code: 550, message: '5.1.1 no such mailbox' } : null) };
}, 30_000);
afterAll(() => env?.stop());

type Contact = { email: string; firstName?: string; lastName?: string; subscribed?: boolean; properties?: Record<string, string> };

async function bookOf(contacts: Contact[]): Promise<string> {
  const book = await team.ok('POST', '/v1/contactBooks', { name: 'Segment book' });
  await team.ok('POST', `/v1/contactBooks/${book.id}/contacts/bulk`, contacts);
  return book.id;
}

const segmentsOf = (bookId: string) => `/v1/contactBooks/${bookId}/segments`;

/** The addresses the filter matches, read through a saved segment's contacts; its count must agree. */
async function matching(bookId: string, filter: unknown): Promise<string[]> {
  const segment = await team.ok('POST', segmentsOf(bookId), { name: 'Probe', filter });
  const res = await env.server.call('GET', `${segmentsOf(bookId)}/${segment.id}/contacts?limit=1000`, { key: team.key });
  expect(res.status).toBe(200);
  const emails = (res.body as { email: string }[]).map((contact) => contact.email).sort();
  expect(segment.count, JSON.stringify(filter)).toBe(emails.length);
  expect(res.headers.get('x-total-count')).toBe(String(emails.length));
  await team.ok('DELETE', `${segmentsOf(bookId)}/${segment.id}`);
  return emails;
}

const ANN = 'ann@a.test';
const BOB = 'bob@b.test';
const CYD = 'cyd@a.test';
const DEE = 'dee@c.test';

describe('the filter language', () => {
  let book: string;
  beforeAll(async () => {
    book = await bookOf([
      { email: ANN, firstName: 'Ann', lastName: 'Lee', properties: { plan: 'pro', seats: '12', renewal: '2026-06-01', note: "O'Brien 100% a_b \\ {x}" } },
      { email: BOB, firstName: 'Bob', properties: { plan: 'free', seats: '3', renewal: 'not a date' } },
      { email: CYD, firstName: 'cyd', subscribed: false, properties: { plan: 'PRO', seats: 'many', renewal: '2026-02-30', 'a.b': 'dotted' } },
      { email: DEE },
    ]);
  });

  const condition = (field: string, op: string, value?: unknown) => ({ all: [{ field, op, ...(value === undefined ? {} : { value }) }] });

  it('each operator on each field matches exactly the contacts it names; text compares case-insensitively', async () => {
    const cases: [unknown, string[]][] = [
      [condition('email', 'eq', 'ANN@A.test'), [ANN]],
      [condition('email', 'neq', ANN), [BOB, CYD, DEE]],
      [condition('email', 'in', [BOB, 'DEE@c.test', 'nobody@x.test']), [BOB, DEE]],
      [condition('email', 'contains', 'EE@'), [DEE]],
      [condition('email', 'startsWith', 'b'), [BOB]],
      [condition('email', 'endsWith', '@A.TEST'), [ANN, CYD]],
      [condition('firstName', 'exists'), [ANN, BOB, CYD]],
      [condition('firstName', 'notExists'), [DEE]],
      [condition('firstName', 'eq', 'CYD'), [CYD]],
      [condition('lastName', 'eq', 'lee'), [ANN]],
      [condition('lastName', 'neq', 'lee'), [BOB, CYD, DEE]],
      [condition('subscribed', 'eq', false), [CYD]],
      [condition('subscribed', 'neq', false), [ANN, BOB, DEE]],
      [condition('createdAt', 'gte', '1 hour ago'), [ANN, BOB, CYD, DEE]],
      [condition('createdAt', 'lt', '2020-01-01'), []],
      [condition('createdAt', 'gt', '2999-01-01T00:00:00Z'), []],
      [condition('updatedAt', 'lte', new Date(Date.now() + 60_000).toISOString()), [ANN, BOB, CYD, DEE]],
      [condition('properties.plan', 'eq', 'pro'), [ANN, CYD]],
      [condition('properties.plan', 'neq', 'pro'), [BOB, DEE]],
      [condition('properties.plan', 'in', ['free', 'team']), [BOB]],
      [condition('properties.plan', 'exists'), [ANN, BOB, CYD]],
      [condition('properties.plan', 'notExists'), [DEE]],
      [condition('properties.seats', 'eq', 12), [ANN]],
      [condition('properties.seats', 'gt', 5), [ANN]],
      [condition('properties.seats', 'gte', 3), [ANN, BOB]],
      [condition('properties.seats', 'lt', 12), [BOB]],
      [condition('properties.seats', 'lte', 12.5), [ANN, BOB]],
      [condition('properties.renewal', 'gte', '2026-01-01'), [ANN]],
      [condition('properties.renewal', 'lt', '30 days ago'), [ANN]],
      [condition('properties.a.b', 'eq', 'dotted'), [CYD]],
    ];
    for (const [filter, expected] of cases) expect(await matching(book, filter), JSON.stringify(filter)).toEqual(expected.sort());
  });

  it('a property of the wrong type never matches a number or a date, and never makes the query fail', async () => {
    // "many" is no number, "not a date" and "2026-02-30" are no dates: those contacts fall out of every comparison.
    expect(await matching(book, condition('properties.seats', 'lt', 1_000_000))).toEqual([ANN, BOB]);
    expect(await matching(book, condition('properties.seats', 'neq', 12))).toEqual([BOB, CYD, DEE]);
    expect(await matching(book, condition('properties.renewal', 'lt', '2999-01-01'))).toEqual([ANN]);
    expect(await matching(book, condition('properties.renewal', 'gt', '1900-01-01'))).toEqual([ANN]);
  });

  it('groups nest: all of, any of, five deep', async () => {
    const nested = {
      all: [
        { field: 'email', op: 'endsWith', value: '@a.test' },
        { any: [{ field: 'subscribed', op: 'eq', value: true }, { field: 'properties.plan', op: 'eq', value: 'free' }] },
      ],
    };
    expect(await matching(book, nested)).toEqual([ANN]);
    expect(await matching(book, { any: [{ field: 'email', op: 'eq', value: BOB }, nested] })).toEqual([ANN, BOB]);
    const deep = { all: [{ any: [{ all: [{ any: [{ all: [{ field: 'firstName', op: 'eq', value: 'bob' }] }] }] }] }] };
    expect(await matching(book, deep)).toEqual([BOB]);
  });

  it('quotes, %, _, backslashes and JSON paths in property names and values are taken literally and find nothing more', async () => {
    expect(await matching(book, condition('properties.note', 'contains', '%'))).toEqual([ANN]);
    expect(await matching(book, condition('properties.note', 'contains', '_'))).toEqual([ANN]);
    expect(await matching(book, condition('properties.note', 'contains', '\\'))).toEqual([ANN]);
    expect(await matching(book, condition('properties.note', 'startsWith', "o'brien"))).toEqual([ANN]);
    expect(await matching(book, condition('properties.note', 'endsWith', '{x}'))).toEqual([ANN]);
    expect(await matching(book, condition('properties.plan', 'contains', '%'))).toEqual([]);
    expect(await matching(book, condition('properties.plan', 'in', ['%', '_', "' OR '1'='1"]))).toEqual([]);
    expect(await matching(book, condition('email', 'eq', "x' OR 1=1 --"))).toEqual([]);
    for (const field of ["properties.plan') OR true --", 'properties.$.plan', 'properties.{plan}', 'properties.plan"', 'properties.a', 'properties.b']) {
      expect(await matching(book, condition(field, 'exists')), field).toEqual([]);
      expect(await matching(book, condition(field, 'neq', 'x')), field).toEqual([ANN, BOB, CYD, DEE]);
    }
  });

  it('an invalid filter is a 400 naming its path, and stores nothing', async () => {
    const deep = (levels: number): unknown => (levels === 0 ? { field: 'email', op: 'exists' } : { all: [deep(levels - 1)] });
    const cases: [unknown, string, string][] = [
      [{}, 'filter', 'must be a group'],
      [{ field: 'email', op: 'exists' }, 'filter', 'must be a group'],
      [{ all: [] }, 'filter.all', 'must be at least 1'],
      [{ all: [{ field: 'email', op: 'gt', value: 'x' }] }, 'filter.all[0].op', 'must be one of: eq, neq, in'],
      [{ all: [{ field: 'nope', op: 'eq', value: 1 }] }, 'filter.all[0].field', 'must be one of: email'],
      [{ all: [{ field: 'email', op: 'like', value: 'x' }] }, 'filter.all[0].op', 'must be one of'],
      [{ all: [{ field: 'subscribed', op: 'eq', value: 'yes' }] }, 'filter.all[0].value', 'must be true or false'],
      [{ all: [{ field: 'email', op: 'eq' }] }, 'filter.all[0].value', 'is required'],
      [{ all: [{ field: 'email', op: 'exists', value: 'x' }] }, 'filter.all[0].value', 'must be left out'],
      [{ all: [{ field: 'email', op: 'contains', value: ['a'] }] }, 'filter.all[0].value', 'must be a single value'],
      [{ all: [{ any: [{ field: 'email', op: 'in', value: [] }] }] }, 'filter.all[0].any[0].value', 'must be a list'],
      [{ all: [{ field: 'properties.seats', op: 'gt', value: 'lots' }] }, 'filter.all[0].value', 'must be a number or a date'],
      [{ all: [{ field: 'createdAt', op: 'gt', value: 5 }] }, 'filter.all[0].value', 'must be a date'],
      [{ all: [{ field: 'email', op: 'eq', value: 'x', event: 'opened' }] }, 'filter.all[0]', 'must be a group'],
      [{ all: [{ field: 'email', op: 'exists' }], any: [{ field: 'email', op: 'exists' }] }, 'filter.any', 'cannot be given together with all'],
      [{ all: [{ event: 'opened', within: 'soon' }] }, 'filter.all[0].within', 'must be a span'],
      [{ all: [{ event: 'opened', within: '999999 years' }] }, 'filter.all[0].within', 'at most 1000 years'],
      [{ all: [{ field: 'createdAt', op: 'gt', value: '99999 years ago' }] }, 'filter.all[0].value', 'must be a date'],
      [{ all: [{ field: 'properties.born', op: 'lt', value: '0000-01-01' }] }, 'filter.all[0].value', 'must be a number or a date'],
      [{ all: [{ event: 'read' }] }, 'filter.all[0].event', 'must be one of: opened, clicked, delivered, bounced'],
      [{ all: [{ event: 'opened', campaignId: 'cmp_nope' }] }, 'filter.all[0].campaignId', 'no campaign cmp_nope'],
      [deep(6), 'filter.all[0].all[0].all[0].all[0].all[0]', 'nests groups more than 5 deep'],
    ];
    for (const [filter, path, message] of cases) {
      const res = await env.server.call('POST', segmentsOf(book), { key: team.key, body: { name: 'Bad', filter } });
      expectApiError(res, 400, 'VALIDATION_ERROR');
      expect(res.body.error.details, JSON.stringify(filter)).toEqual(expect.arrayContaining([{ path, message: expect.stringContaining(message) }]));
    }
    const saved = await team.ok('POST', segmentsOf(book), { name: 'Kept', filter: condition('email', 'exists') });
    const refused = await env.server.call('PATCH', `${segmentsOf(book)}/${saved.id}`, { key: team.key, body: { name: 'Changed', filter: { all: [{ field: 'nope', op: 'eq' }] } } });
    expectApiError(refused, 400, 'VALIDATION_ERROR');
    expect((await team.ok('GET', segmentsOf(book))).data).toEqual([{ ...saved, count: 4 }]);
    await team.ok('DELETE', `${segmentsOf(book)}/${saved.id}`);
  });

  it('a segment is its book\'s: under another book it is a 404, and a campaign of another book cannot go to it', async () => {
    const other = await bookOf([{ email: 'solo@d.test' }]);
    const segment = await team.ok('POST', segmentsOf(book), { name: 'Pros', filter: condition('properties.plan', 'eq', 'pro') });
    for (const [method, suffix, body] of [['GET', ''], ['GET', '/contacts'], ['PATCH', '', { name: 'Stolen' }], ['DELETE', '']] as const) {
      expectApiError(await env.server.call(method, `${segmentsOf(other)}/${segment.id}${suffix}`, { key: team.key, body }), 404, 'NOT_FOUND');
    }
    const refused = await env.server.call('POST', '/v1/campaigns', {
      key: team.key,
      body: { name: 'Wrong book', from: `news@${team.domain.name}`, subject: 'Hi', contactBookId: other, segmentId: segment.id, html: '<a href="{{unsubscribeUrl}}">u</a>' },
    });
    expectApiError(refused, 400, 'VALIDATION_ERROR');
    expect(refused.body.error.details).toEqual([{ path: 'segmentId', message: expect.stringContaining('not found in contact book') }]);
    expect(await team.ok('GET', `${segmentsOf(book)}/${segment.id}`)).toMatchObject({ name: 'Pros', count: 2 });
    await team.ok('DELETE', `${segmentsOf(book)}/${segment.id}`);
  });
});

const HTML = '<p>News</p><a href="https://example.com/offer">Offer</a> <a href="{{unsubscribeUrl}}">Unsubscribe</a>';

/** Sends a campaign to the book (or its segment) and waits until it is SENT; answers it with its email id per address. */
async function sendCampaign(bookId: string, segmentId?: string, batchSize = 500) {
  const created = await team.ok('POST', '/v1/campaigns', {
    name: 'Segmented', from: `News <news@${team.domain.name}>`, subject: 'News', contactBookId: bookId, html: HTML, sendNow: true, batchSize,
    ...(segmentId && { segmentId }),
  });
  expect(created.segmentId).toBe(segmentId ?? null);
  const campaign = await waitFor('campaign SENT', () => team.ok('GET', `/v1/campaigns/${created.id}`), (c) => c.status === 'SENT');
  const rows = await env.server.deps.db.selectFrom('emails').select(['id', 'to_addresses']).where('team_id', '=', team.teamId).where('campaign_id', '=', created.id).execute();
  return { campaign, emailIdOf: new Map(rows.map((row) => [row.to_addresses[0]!, row.id])) };
}

/** The tracked pixel and first link of a message as the sink got it. */
async function trackedUrls(emailId: string) {
  const html = (await PostalMime.parse(team.sentMessage(emailId).raw)).html ?? '';
  const path = (url: string) => env.server.url + new URL(url.replaceAll('&amp;', '&')).pathname;
  return {
    pixel: path(/<img\b[^>]*src="([^"]*\/track\/open\/[^"]*)"/.exec(html)![1]!),
    link: path(/<a\b[^>]*href="([^"]*\/track\/click\/[^"]*)"/.exec(html)![1]!),
  };
}

describe('engagement conditions', () => {
  const OPENER = 'opener@e.test';
  const CLICKER = 'clicker@e.test';
  const IDLE = 'idle@e.test';
  const GONE = 'gone@e.test';
  let book: string;
  let first: string;
  let second: string;

  beforeAll(async () => {
    book = await bookOf([{ email: OPENER }, { email: CLICKER }, { email: IDLE }, { email: GONE }]);
    const sent = await sendCampaign(book);
    first = sent.campaign.id;
    const opened = await fetch((await trackedUrls(sent.emailIdOf.get(OPENER)!)).pixel);
    expect(opened.status).toBe(200);
    const clicked = await fetch((await trackedUrls(sent.emailIdOf.get(CLICKER)!)).link, { redirect: 'manual' });
    expect(clicked.status).toBe(302);
    await waitFor('the open and the click recorded', () => team.ok('GET', `/v1/campaigns/${first}`), (c) => c.opened === 1 && c.clicked === 1 && c.bounced === 1);
    second = (await sendCampaign(book)).campaign.id;
  }, 60_000);

  const engaged = (condition: Record<string, unknown>) => matching(book, { all: [{ event: 'opened', ...condition }] });

  it('opened, clicked, delivered and bounced match the contacts whose mail had that event, after real opens, clicks and a refusal', async () => {
    expect(await engaged({})).toEqual([OPENER]);
    expect(await engaged({ event: 'clicked' })).toEqual([CLICKER]);
    expect(await engaged({ event: 'delivered' })).toEqual([CLICKER, IDLE, OPENER].sort());
    expect(await engaged({ event: 'bounced' })).toEqual([GONE]);
  });

  it('negate matches the contacts without such an event; within and campaignId narrow what counts', async () => {
    expect(await engaged({ negate: true })).toEqual([CLICKER, GONE, IDLE].sort());
    expect(await engaged({ within: '1 hour' })).toEqual([OPENER]);
    expect(await engaged({ campaignId: first })).toEqual([OPENER]);
    expect(await engaged({ campaignId: second })).toEqual([]);
    expect(await engaged({ event: 'delivered', campaignId: second })).toEqual([CLICKER, IDLE, OPENER].sort());
    // Nothing was opened in the last hour once the open is older than that: the event and the
    // time its contact keeps both moved back.
    const { db } = env.server.deps;
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
    await db.updateTable('email_events').set({ created_at: twoHoursAgo }).where('team_id', '=', team.teamId).where('status', '=', 'OPENED').execute();
    await db.updateTable('contacts').set({ last_opened_at: twoHoursAgo }).where('team_id', '=', team.teamId).where('last_opened_at', 'is not', null).execute();
    expect(await engaged({ within: '1 hour' })).toEqual([]);
    expect(await engaged({ within: '3 hours' })).toEqual([OPENER]);
  });
});

describe('campaigns to a segment', () => {
  it('reach exactly the subscribed, unsuppressed contacts the segment matches, each once, over several batches', async () => {
    const pros = ['p1@f.test', 'p2@f.test', 'p3@f.test', 'p4@f.test', 'p5@f.test'];
    const book = await bookOf([
      ...pros.map((email) => ({ email, properties: { plan: 'pro' } })),
      { email: 'free1@f.test', properties: { plan: 'free' } },
      { email: 'free2@f.test' },
      { email: 'quit@f.test', subscribed: false, properties: { plan: 'pro' } },
      { email: 'blocked@f.test', properties: { plan: 'pro' } },
    ]);
    await team.ok('POST', '/v1/suppressions', { email: 'blocked@f.test' });
    const segment = await team.ok('POST', segmentsOf(book), { name: 'Pros', filter: { all: [{ field: 'properties.plan', op: 'eq', value: 'pro' }] } });
    expect(segment.count).toBe(7);
    const { campaign, emailIdOf } = await sendCampaign(book, segment.id, 2);
    expect([...emailIdOf.keys()].sort()).toEqual(pros);
    expect(campaign).toMatchObject({ total: pros.length, sent: pros.length, segmentId: segment.id });
    const reached = env.sink.received.flatMap((message) => message.rcptTo).filter((address) => address.endsWith('@f.test'));
    expect(reached.sort()).toEqual(pros);
  });

  it('PATCH points a campaign at another segment of its book (or the whole book) until its release starts, then refuses with 409', async () => {
    const book = await bookOf([
      { email: 'pro@h.test', properties: { plan: 'pro' } },
      { email: 'free@h.test', properties: { plan: 'free' } },
    ]);
    const pros = await team.ok('POST', segmentsOf(book), { name: 'Pros', filter: { all: [{ field: 'properties.plan', op: 'eq', value: 'pro' }] } });
    const frees = await team.ok('POST', segmentsOf(book), { name: 'Frees', filter: { all: [{ field: 'properties.plan', op: 'eq', value: 'free' }] } });
    const draft = await team.ok('POST', '/v1/campaigns', {
      name: 'Draft', from: `news@${team.domain.name}`, subject: 'News', contactBookId: book, segmentId: pros.id, html: HTML,
    });
    const path = `/v1/campaigns/${draft.id}`;
    expect(await team.ok('PATCH', path, { segmentId: null, name: 'To everyone' })).toMatchObject({ segmentId: null, name: 'To everyone' });
    expect(await team.ok('PATCH', path, { segmentId: frees.id })).toMatchObject({ segmentId: frees.id, name: 'To everyone' });

    // A segment of another book, or of another team, is refused by name, and the campaign keeps its own.
    const elsewhere = await team.ok('POST', segmentsOf(await bookOf([{ email: 'x@h.test' }])), { name: 'Elsewhere', filter: { all: [{ field: 'email', op: 'exists' }] } });
    const stranger = await feedbackTeam(env.server, env.sink, 'segments-other.test');
    const theirs = await stranger.ok('POST', `/v1/contactBooks/${(await stranger.ok('POST', '/v1/contactBooks', { name: 'Theirs' })).id}/segments`, {
      name: 'Theirs', filter: { all: [{ field: 'email', op: 'exists' }] },
    });
    for (const segmentId of [elsewhere.id, theirs.id]) {
      const refused = await env.server.call('PATCH', path, { key: team.key, body: { segmentId } });
      expectApiError(refused, 400, 'VALIDATION_ERROR');
      expect(refused.body.error.details).toEqual([{ path: 'segmentId', message: expect.stringContaining('not found in contact book') }]);
    }
    // Another team's key finds no such campaign.
    expectApiError(await env.server.call('PATCH', path, { key: stranger.key, body: { segmentId: null } }), 404, 'NOT_FOUND');
    expect(await team.ok('GET', path)).toMatchObject({ segmentId: frees.id, name: 'To everyone' });

    // Sent, it goes to the segment it was pointed at last; started, its recipients are fixed.
    await team.ok('POST', `${path}/schedule`, {});
    const sent = await waitFor('campaign SENT', () => team.ok('GET', path), (c) => c.status === 'SENT');
    expect(sent).toMatchObject({ total: 1, sent: 1 });
    const refused = await env.server.call('PATCH', path, { key: team.key, body: { segmentId: pros.id } });
    expectApiError(refused, 409, 'CONFLICT');
    expect(await team.ok('PATCH', path, { name: 'Renamed after' })).toMatchObject({ name: 'Renamed after', segmentId: frees.id });
    const reached = env.sink.received.flatMap((message) => message.rcptTo).filter((address) => address.endsWith('@h.test'));
    expect(reached).toEqual(['free@h.test']);
  });

  it('a segment a campaign not yet sent goes to cannot be deleted; once the campaign is gone it can', async () => {
    const book = await bookOf([{ email: 'later@g.test' }]);
    const segment = await team.ok('POST', segmentsOf(book), { name: 'All', filter: { all: [{ field: 'email', op: 'exists' }] } });
    const campaign = await team.ok('POST', '/v1/campaigns', {
      name: 'Later', from: `news@${team.domain.name}`, subject: 'Later', contactBookId: book, segmentId: segment.id, html: HTML, scheduledAt: 'in 30 days',
    });
    const refused = await env.server.call('DELETE', `${segmentsOf(book)}/${segment.id}`, { key: team.key });
    expectApiError(refused, 409, 'CONFLICT');
    expect(refused.body.error.message).toContain(campaign.id);
    await team.ok('DELETE', `/v1/campaigns/${campaign.id}`);
    expect(await team.ok('DELETE', `${segmentsOf(book)}/${segment.id}`)).toEqual({ id: segment.id, success: true });
    expectApiError(await env.server.call('GET', `${segmentsOf(book)}/${segment.id}`, { key: team.key }), 404, 'NOT_FOUND');
  });
});
