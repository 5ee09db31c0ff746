import * as books from '../data/contact-books.js';
import { deleteBookSegments } from '../data/segments.js';
import type { ContactBookFields, ContactBookRow } from '../data/contact-books.js';
import { detachBook, findActiveCampaignOfBook } from '../data/campaigns.js';
import { audit } from '../events/audit.js';
import { conflict, invalid, notFound } from '../errors.js';
import { newId } from '../ids.js';
import { parseMailbox } from '../mail/address.js';
import { assertBookInScope, assertDomainInScope, type Caller } from './caller.js';
import { assertVerifiedSender, type SenderDeps } from './verified-sender.js';

export type ContactBookDeps = SenderDeps;

export const DOUBLE_OPT_IN_PLACEHOLDER = '{{doubleOptInUrl}}';
export const DEFAULT_EMOJI = '📙';
const DEFAULT_DOUBLE_OPT_IN_SUBJECT = 'Please confirm your subscription';
const DEFAULT_DOUBLE_OPT_IN_CONTENT =
  '<p>Please confirm that you want to receive our emails.</p>' +
  `<p><a href="${DOUBLE_OPT_IN_PLACEHOLDER}">Confirm my subscription</a></p>` +
  "<p>If you did not ask for this, ignore this email and you won't hear from us.</p>";

export type ContactBook = ReturnType<typeof toContactBook>;

export function toContactBook(row: ContactBookRow) {
  return {
    id: row.id,
    name: row.name,
    teamId: row.team_id,
    properties: row.properties,
    variables: row.variables,
    emoji: row.emoji,
    doubleOptInEnabled: row.double_opt_in_enabled,
    doubleOptInFrom: row.double_opt_in_from,
    doubleOptInSubject: row.double_opt_in_subject,
    doubleOptInContent: row.double_opt_in_content,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    _count: { contacts: row.contact_count },
  };
}

export type CreateContactBookInput = Partial<Omit<ContactBookFields, 'name'>> & { name: string };
export type UpdateContactBookInput = Partial<ContactBookFields>;

/** The double opt-in rules, checked on the book as it will be once the change is applied. */
async function assertDoubleOptIn(deps: SenderDeps, caller: Caller, book: ContactBookFields, changed: UpdateContactBookInput) {
  if (changed.doubleOptInContent != null && !changed.doubleOptInContent.includes(DOUBLE_OPT_IN_PLACEHOLDER)) {
    throw invalid('doubleOptInContent', `must contain the ${DOUBLE_OPT_IN_PLACEHOLDER} placeholder`);
  }
  if (changed.doubleOptInFrom != null && !parseMailbox(changed.doubleOptInFrom)) {
    throw invalid('doubleOptInFrom', `"${changed.doubleOptInFrom}" is not a valid email address`);
  }
  if (!book.doubleOptInEnabled) return;
  if (!book.doubleOptInFrom) {
    throw invalid('doubleOptInFrom', 'is required when double opt-in is enabled: the address on a verified domain that sends the confirmation');
  }
  if (changed.doubleOptInEnabled || changed.doubleOptInFrom !== undefined) {
    const { domain } = await assertVerifiedSender(deps, caller.teamId, book.doubleOptInFrom, 'doubleOptInFrom');
    assertDomainInScope(caller, domain.id, `send confirmations from ${domain.name}`);
  }
}

export async function createContactBook(deps: ContactBookDeps, caller: Caller, input: CreateContactBookInput) {
  const fields: ContactBookFields = {
    name: input.name,
    emoji: input.emoji ?? DEFAULT_EMOJI,
    properties: input.properties ?? {},
    variables: input.variables ?? [],
    doubleOptInEnabled: input.doubleOptInEnabled ?? false,
    doubleOptInFrom: input.doubleOptInFrom ?? null,
    doubleOptInSubject: input.doubleOptInSubject ?? DEFAULT_DOUBLE_OPT_IN_SUBJECT,
    doubleOptInContent: input.doubleOptInContent ?? DEFAULT_DOUBLE_OPT_IN_CONTENT,
  };
  await assertDoubleOptIn(deps, caller, fields, input);
  const id = newId();
  await deps.db.transaction().execute(async (tx) => {
    await books.insertContactBook(tx, caller.teamId, id, fields);
    await audit(tx, caller, { action: 'contactBook.created', targetType: 'contactBook', targetId: id });
  });
  return getContactBook(deps, caller, { contactBookId: id });
}

export async function listContactBooks({ db }: ContactBookDeps, { teamId }: Caller) {
  return (await books.listContactBooks(db, teamId)).map(toContactBook);
}

export async function getContactBook({ db }: ContactBookDeps, { teamId }: Caller, { contactBookId }: { contactBookId: string }) {
  const row = await books.findContactBook(db, teamId, contactBookId);
  if (!row) throw notFound('Contact book');
  return toContactBook(row);
}

export async function updateContactBook(deps: ContactBookDeps, caller: Caller, request: { contactBookId: string; changes: UpdateContactBookInput }) {
  const { contactBookId: id, changes: input } = request;
  const { teamId } = caller;
  return deps.db.transaction().execute(async (tx) => {
    const current = await books.findContactBook(tx, teamId, id, true);
    if (!current) throw notFound('Contact book');
    await assertBookInScope(tx, caller, current);
    const merged: ContactBookFields = {
      name: input.name ?? current.name,
      emoji: input.emoji ?? current.emoji,
      properties: input.properties ?? current.properties,
      variables: input.variables ?? current.variables,
      doubleOptInEnabled: input.doubleOptInEnabled ?? current.double_opt_in_enabled,
      doubleOptInFrom: input.doubleOptInFrom !== undefined ? input.doubleOptInFrom : current.double_opt_in_from,
      doubleOptInSubject: input.doubleOptInSubject ?? current.double_opt_in_subject,
      doubleOptInContent: input.doubleOptInContent ?? current.double_opt_in_content,
    };
    await assertDoubleOptIn({ ...deps, db: tx }, caller, merged, input);
    await books.updateContactBook(tx, teamId, id, input);
    await audit(tx, caller, { action: 'contactBook.updated', targetType: 'contactBook', targetId: id });
    return toContactBook((await books.findContactBook(tx, teamId, id))!);
  });
}

export async function deleteContactBook({ db }: ContactBookDeps, caller: Caller, { contactBookId: id }: { contactBookId: string }) {
  const { teamId } = caller;
  return db.transaction().execute(async (tx) => {
    const current = await books.findContactBook(tx, teamId, id, true);
    if (!current) throw notFound('Contact book');
    await assertBookInScope(tx, caller, current);
    // The book's row lock taken above waits out a campaign being created on it (which key-share locks it).
    const active = await findActiveCampaignOfBook(tx, teamId, id);
    if (active) {
      throw conflict(`Contact book ${id} is used by campaign ${active.id} ("${active.name}"), which is ${active.status}; pause or delete the campaign first`);
    }
    await detachBook(tx, teamId, id);
    await deleteBookSegments(tx, teamId, id);
    await books.deleteContactBook(tx, teamId, id);
    await audit(tx, caller, { action: 'contactBook.deleted', targetType: 'contactBook', targetId: id });
    return {
      id,
      success: true,
      message: `Contact book deleted with its ${current.contact_count} contact${current.contact_count === 1 ? '' : 's'}`,
    };
  });
}
