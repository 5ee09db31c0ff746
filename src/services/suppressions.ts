import type { Db } from '../db/connection.js';
import * as suppressions from '../data/suppressions.js';
import type { SuppressionRow } from '../data/suppressions.js';
import { normalizeEmail } from '../email-address.js';
import { ApiError, invalid, notFound } from '../errors.js';

/** Who asks: the suppression list is the team's, so a key scoped to one domain may not manage it. */
export type SuppressionCaller = { teamId: number; domainId: number | null };

function assertTeamWide(caller: SuppressionCaller) {
  if (caller.domainId !== null) {
    throw new ApiError('FORBIDDEN', `This API key is scoped to domain ${caller.domainId}; the suppression list belongs to the whole team`);
  }
}

const toSuppression = (row: SuppressionRow) => ({
  email: row.email,
  reason: row.reason,
  sourceEmailId: row.source_email_id,
  createdAt: row.created_at.toISOString(),
});

/** Addresses are kept lower-case, as the dispatcher compares them. */
function addressKey(input: string, field: string): string {
  const address = normalizeEmail(input);
  if (!address) throw invalid(field, `"${input}" is not a valid email address`);
  return address.toLowerCase();
}

export async function listSuppressions(db: Db, caller: SuppressionCaller, page: { page: number; limit: number }) {
  assertTeamWide(caller);
  const { rows, count } = await suppressions.listSuppressions(db, caller.teamId, { offset: (page.page - 1) * page.limit, limit: page.limit });
  return { data: rows.map(toSuppression), count };
}

export async function addSuppression(db: Db, caller: SuppressionCaller, email: string) {
  assertTeamWide(caller);
  return toSuppression(await suppressions.addSuppression(db, caller.teamId, addressKey(email, 'email'), 'MANUAL'));
}

export async function removeSuppression(db: Db, caller: SuppressionCaller, email: string) {
  assertTeamWide(caller);
  const address = normalizeEmail(email)?.toLowerCase();
  if (!address || !(await suppressions.removeSuppression(db, caller.teamId, address))) throw notFound('Suppression');
  return { success: true };
}
