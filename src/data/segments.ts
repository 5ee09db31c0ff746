import { sql, type Selectable } from 'kysely';
import type { Filter } from '../audience/segment-filter.js';
import type { Db } from '../db/connection.js';
import type { SegmentsTable } from '../db/schema.js';
import type { ContactRow } from './contacts.js';
import { filterSql } from './segment-sql.js';

export type SegmentRow = Omit<Selectable<SegmentsTable>, 'filter'> & { filter: Filter };

export async function insertSegment(db: Db, row: { teamId: number; bookId: string; id: string; name: string; filter: Filter; now: Date }): Promise<SegmentRow> {
  return (await db
    .insertInto('segments')
    .values({ team_id: row.teamId, contact_book_id: row.bookId, id: row.id, name: row.name, filter: JSON.stringify(row.filter), created_at: row.now, updated_at: row.now })
    .returningAll()
    .executeTakeFirstOrThrow()) as SegmentRow;
}

export async function listSegments(db: Db, teamId: number, bookId: string): Promise<SegmentRow[]> {
  return (await db
    .selectFrom('segments')
    .selectAll()
    .where('team_id', '=', teamId)
    .where('contact_book_id', '=', bookId)
    .orderBy('created_at')
    .orderBy('id')
    .execute()) as SegmentRow[];
}

export type SegmentLock = 'keyShare' | 'update';

/**
 * The team's segment of this book. A `keyShare` lock keeps it from being deleted until the
 * caller's transaction ends (a campaign being created to it); `update` waits those out.
 */
export async function findSegment(db: Db, teamId: number, bookId: string, id: string, lock?: SegmentLock): Promise<SegmentRow | undefined> {
  let query = db.selectFrom('segments').selectAll().where('team_id', '=', teamId).where('contact_book_id', '=', bookId).where('id', '=', id);
  if (lock === 'keyShare') query = query.forKeyShare();
  if (lock === 'update') query = query.forUpdate();
  return (await query.executeTakeFirst()) as SegmentRow | undefined;
}

export async function updateSegment(db: Db, teamId: number, id: string, set: { name?: string; filter?: Filter; now: Date }): Promise<SegmentRow> {
  return (await db
    .updateTable('segments')
    .set({ ...(set.name !== undefined && { name: set.name }), ...(set.filter !== undefined && { filter: JSON.stringify(set.filter) }), updated_at: set.now })
    .where('team_id', '=', teamId)
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirstOrThrow()) as SegmentRow;
}

export async function deleteSegment(db: Db, teamId: number, id: string): Promise<void> {
  await db.deleteFrom('segments').where('team_id', '=', teamId).where('id', '=', id).execute();
}

/** Deletes the book's segments, with the book (in its transaction). */
export async function deleteBookSegments(db: Db, teamId: number, bookId: string): Promise<void> {
  await db.deleteFrom('segments').where('team_id', '=', teamId).where('contact_book_id', '=', bookId).execute();
}

/** The campaigns not yet sent that go to this segment: a segment they need cannot be deleted. */
export async function campaignsUsingSegment(db: Db, teamId: number, segmentId: string): Promise<{ id: string; status: string }[]> {
  return db
    .selectFrom('campaigns')
    .select(['id', 'status'])
    .where('team_id', '=', teamId)
    .where('segment_id', '=', segmentId)
    .where('status', 'in', ['DRAFT', 'SCHEDULED', 'RUNNING', 'PAUSED'])
    .orderBy('created_at')
    .execute();
}

/** Sent campaigns forget a deleted segment (in the deleting transaction). */
export async function forgetSegment(db: Db, teamId: number, segmentId: string): Promise<void> {
  await db.updateTable('campaigns').set({ segment_id: null }).where('team_id', '=', teamId).where('segment_id', '=', segmentId).execute();
}

/** How many contacts of the book the filter matches now: one scan of the book, the filter in its WHERE. */
export async function countMatching(db: Db, teamId: number, bookId: string, filter: Filter, now: Date): Promise<number> {
  const { rows } = await sql<{ count: number }>`
    SELECT count(*)::int AS count FROM contacts c
    WHERE c.team_id = ${teamId} AND c.contact_book_id = ${bookId} AND ${filterSql(filter, now)}`.execute(db);
  return rows[0]!.count;
}

/** One page of the contacts the filter matches, in creation order (contacts_book_order). */
export async function listMatching(db: Db, teamId: number, bookId: string, filter: Filter, now: Date, page: { offset: number; limit: number }): Promise<ContactRow[]> {
  const { rows } = await sql<ContactRow>`
    SELECT c.* FROM contacts c
    WHERE c.team_id = ${teamId} AND c.contact_book_id = ${bookId} AND ${filterSql(filter, now)}
    ORDER BY c.created_at, c.id
    OFFSET ${page.offset} LIMIT ${page.limit}`.execute(db);
  return rows;
}
