import { namedCampaigns, namedSteps, type Filter } from '../audience/segment-filter.js';
import type { Db } from '../db/connection.js';
import { findCampaign } from '../data/campaigns.js';
import * as segments from '../data/segments.js';
import type { SegmentRow } from '../data/segments.js';
import type { Deps } from '../deps.js';
import { audit } from '../events/audit.js';
import { conflict, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { fieldPath, validationError } from '../validation.js';
import { assertBookInScope, type Caller } from './caller.js';
import { requireBook, toContact } from './contacts.js';

export type SegmentDeps = Pick<Deps, 'db'>;

function toSegment(row: SegmentRow, count: number) {
  return {
    id: row.id,
    contactBookId: row.contact_book_id,
    name: row.name,
    filter: row.filter,
    count,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

async function requireSegment(db: Db, teamId: number, bookId: string, segmentId: string, lock?: segments.SegmentLock) {
  const row = await segments.findSegment(db, teamId, bookId, segmentId, lock);
  if (row) return row;
  await requireBook(db, teamId, bookId);
  throw notFound('Segment');
}

/** Every campaign a filter names must be one of the team's, sent to this book, and it names no automation step (400 naming where otherwise). */
async function checkCampaigns(db: Db, teamId: number, bookId: string, filter: Filter) {
  const problems = [];
  for (const { campaignId, path } of namedCampaigns(filter)) {
    const campaign = await findCampaign(db, teamId, campaignId);
    if (!campaign || campaign.contact_book_id !== bookId) {
      problems.push({ path: fieldPath(['filter', ...path]), message: `no campaign ${campaignId} of this contact book in this team` });
    }
  }
  for (const { path } of namedSteps(filter)) {
    problems.push({ path: fieldPath(['filter', ...path]), message: "names an automation's send step: only an automation's condition may" });
  }
  if (problems.length > 0) throw validationError(problems);
}

const count = (db: Db, row: SegmentRow) => segments.countMatching(db, row.team_id, row.contact_book_id, row.filter, new Date());

export async function createSegment(deps: SegmentDeps, caller: Caller, input: { contactBookId: string; name: string; filter: Filter }) {
  const row = await deps.db.transaction().execute(async (tx) => {
    // The key-share lock keeps the book from being deleted until its segment exists.
    const book = await requireBook(tx, caller.teamId, input.contactBookId, 'keyShare');
    await assertBookInScope(tx, caller, book);
    await checkCampaigns(tx, caller.teamId, book.id, input.filter);
    const created = await segments.insertSegment(tx, { teamId: caller.teamId, bookId: book.id, id: newId(), name: input.name, filter: input.filter, now: new Date() });
    await audit(tx, caller, { action: 'segment.created', targetType: 'segment', targetId: created.id });
    return created;
  });
  return toSegment(row, await count(deps.db, row));
}

/** The book's segments, each with its count now. */
export async function listSegments(deps: SegmentDeps, caller: Caller, { contactBookId }: { contactBookId: string }) {
  await requireBook(deps.db, caller.teamId, contactBookId);
  const rows = await segments.listSegments(deps.db, caller.teamId, contactBookId);
  return { data: await Promise.all(rows.map(async (row) => toSegment(row, await count(deps.db, row)))) };
}

export async function getSegment(deps: SegmentDeps, caller: Caller, { contactBookId, segmentId }: { contactBookId: string; segmentId: string }) {
  const row = await requireSegment(deps.db, caller.teamId, contactBookId, segmentId);
  return toSegment(row, await count(deps.db, row));
}

export async function updateSegment(
  deps: SegmentDeps,
  caller: Caller,
  { contactBookId, segmentId, ...changes }: { contactBookId: string; segmentId: string; name?: string; filter?: Filter },
) {
  const row = await deps.db.transaction().execute(async (tx) => {
    const book = await requireBook(tx, caller.teamId, contactBookId, 'keyShare');
    await assertBookInScope(tx, caller, book);
    await requireSegment(tx, caller.teamId, contactBookId, segmentId, 'update');
    if (changes.filter) await checkCampaigns(tx, caller.teamId, contactBookId, changes.filter);
    const updated = await segments.updateSegment(tx, caller.teamId, segmentId, { ...changes, now: new Date() });
    await audit(tx, caller, { action: 'segment.updated', targetType: 'segment', targetId: segmentId });
    return updated;
  });
  return toSegment(row, await count(deps.db, row));
}

/** Deletes it, unless a campaign not yet sent goes to it (409 naming the campaign). */
export async function deleteSegment(deps: SegmentDeps, caller: Caller, { contactBookId, segmentId }: { contactBookId: string; segmentId: string }) {
  return deps.db.transaction().execute(async (tx) => {
    const book = await requireBook(tx, caller.teamId, contactBookId);
    await assertBookInScope(tx, caller, book);
    await requireSegment(tx, caller.teamId, contactBookId, segmentId, 'update');
    const [using] = await segments.campaignsUsingSegment(tx, caller.teamId, segmentId);
    if (using) throw conflict(`Segment ${segmentId} is used by campaign ${using.id}, which is ${using.status}; delete the campaign or let it finish first`);
    await segments.forgetSegment(tx, caller.teamId, segmentId);
    await segments.deleteSegment(tx, caller.teamId, segmentId);
    await audit(tx, caller, { action: 'segment.deleted', targetType: 'segment', targetId: segmentId });
    return { id: segmentId, success: true };
  });
}

/** A page of the contacts the segment matches now, and how many it matches. */
export async function segmentContacts(
  deps: SegmentDeps,
  caller: Caller,
  { contactBookId, segmentId, page, limit }: { contactBookId: string; segmentId: string; page: number; limit: number },
) {
  const row = await requireSegment(deps.db, caller.teamId, contactBookId, segmentId);
  const now = new Date();
  const [rows, total] = await Promise.all([
    segments.listMatching(deps.db, caller.teamId, contactBookId, row.filter, now, { offset: (page - 1) * limit, limit }),
    segments.countMatching(deps.db, caller.teamId, contactBookId, row.filter, now),
  ]);
  return { contacts: rows.map(toContact), total };
}

/** How many contacts of the book a filter matches now, without saving it: what a segment of it would count. */
export async function countFilter(deps: SegmentDeps, caller: Caller, { contactBookId, filter }: { contactBookId: string; filter: Filter }) {
  await requireBook(deps.db, caller.teamId, contactBookId);
  await checkCampaigns(deps.db, caller.teamId, contactBookId, filter);
  return { count: await segments.countMatching(deps.db, caller.teamId, contactBookId, filter, new Date()) };
}

/** The names of the segments of these books of the team, uncounted: what a form offers to choose from. */
export async function segmentNames(deps: SegmentDeps, caller: Caller, { contactBookIds }: { contactBookIds: string[] }) {
  const rows = await Promise.all(contactBookIds.map((bookId) => segments.listSegments(deps.db, caller.teamId, bookId)));
  return rows.flat().map((row) => ({ id: row.id, contactBookId: row.contact_book_id, name: row.name }));
}

/** The segment a campaign goes to: one of the team's, of the campaign's book (400 naming segmentId otherwise). */
export async function segmentForCampaign(db: Db, teamId: number, bookId: string, segmentId: string): Promise<SegmentRow> {
  const row = await segments.findSegment(db, teamId, bookId, segmentId, 'keyShare');
  if (!row) throw validationError([{ path: 'segmentId', message: `segment ${segmentId} not found in contact book ${bookId}` }]);
  return row;
}
