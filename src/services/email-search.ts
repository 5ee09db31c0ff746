import type { Deps } from '../deps.js';
import type { EmailStatus } from '../db/schema.js';
import { exceedsWindow, findEmailExtras, searchEmails as searchRows } from '../data/email-search.js';
import { notFound, type ErrorDetail } from '../errors.js';
import { validationError } from '../validation.js';
import { assertDomainInScope, type Caller } from './caller.js';
import { listedDomain } from './emails.js';

type SearchDeps = Pick<Deps, 'db'>;

export const PAGE_SIZE = 50;
/**
 * How many of the newest emails (of a domain, in a date range) one search looks through. It bounds
 * what any page costs whatever the filters; the dates reach older mail.
 */
export const SEARCH_WINDOW = 10_000;
export const MAX_SEARCH_LENGTH = 200;

export type EmailSearchQuery = {
  page: number;
  domainId?: number;
  status?: EmailStatus;
  startDate?: Date;
  endDate?: Date;
  /** A case-insensitive substring of the subject or of a recipient's address. */
  q?: string;
};

/**
 * A page of the team's mail, newest first, filtered as the API's list filters and searched by
 * subject or recipient. `olderUnread`: the search reached the end of its window while the filters
 * hold older mail, which narrower dates would reach.
 */
export async function searchEmails(deps: SearchDeps, caller: Caller, query: EmailSearchQuery) {
  const problems: ErrorDetail[] = [];
  const maxPage = SEARCH_WINDOW / PAGE_SIZE;
  if (query.page > maxPage) problems.push({ path: 'page', message: `must be at most ${maxPage}: narrow the dates to see older mail` });
  if (query.startDate && query.endDate && query.startDate > query.endDate) problems.push({ path: 'endDate', message: 'must not be before the start date' });
  const text = query.q?.trim() || null;
  if (text && text.length > MAX_SEARCH_LENGTH) problems.push({ path: 'q', message: `must be at most ${MAX_SEARCH_LENGTH} characters` });
  if (problems.length > 0) throw validationError(problems);
  const search = {
    domainId: await listedDomain(deps, caller, query.domainId),
    status: query.status ?? null,
    startDate: query.startDate ?? null,
    endDate: query.endDate ?? null,
    text,
  };
  const rows = await searchRows(deps.db, caller.teamId, search, { offset: (query.page - 1) * PAGE_SIZE, limit: PAGE_SIZE + 1, window: SEARCH_WINDOW });
  const hasMore = rows.length > PAGE_SIZE;
  return {
    emails: rows.slice(0, PAGE_SIZE).map((row) => ({
      id: row.id,
      // Everyone it went to, as the search matches them.
      recipients: [...row.to_addresses, ...row.cc_addresses, ...row.bcc_addresses],
      subject: row.subject,
      status: row.status,
      domainId: row.domain_id,
      createdAt: row.created_at.toISOString(),
      scheduledAt: row.scheduled_at?.toISOString() ?? null,
    })),
    hasMore,
    olderUnread: !hasMore && (await exceedsWindow(deps.db, caller.teamId, search, SEARCH_WINDOW)),
  };
}

/** What the API's email leaves out: its campaign, its custom header fields, and when retention dropped its body. */
export async function emailExtras(deps: SearchDeps, caller: Caller, input: { emailId: string }) {
  const row = await findEmailExtras(deps.db, caller.teamId, input.emailId);
  if (!row) throw notFound('Email');
  assertDomainInScope(caller, row.domain_id, 'access mail of another domain');
  return {
    campaign: row.campaign_id ? { id: row.campaign_id, name: row.campaign_name } : null,
    headers: row.headers,
    bodyDroppedAt: row.body_dropped_at?.toISOString() ?? null,
  };
}
