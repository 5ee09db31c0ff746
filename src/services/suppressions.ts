import type { Deps } from '../deps.js';
import * as suppressions from '../data/suppressions.js';
import type { SuppressionRow } from '../data/suppressions.js';
import { audit } from '../events/audit.js';
import { invalid, notFound } from '../errors.js';
import { normalizeEmail } from '../mail/address.js';
import { assertTeamWide, type Caller } from './caller.js';

export type SuppressionDeps = Pick<Deps, 'db'>;

// The suppression list is the team's, so a key scoped to one domain may not manage it.
const TEAM_WIDE = 'the suppression list belongs to the whole team';

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

export async function listSuppressions({ db }: SuppressionDeps, caller: Caller, page: { page: number; limit: number }) {
  assertTeamWide(caller, TEAM_WIDE);
  const { rows, count } = await suppressions.listSuppressions(db, caller.teamId, { offset: (page.page - 1) * page.limit, limit: page.limit });
  return { data: rows.map(toSuppression), count };
}

/** Suppresses an address by hand. Its audit row names the address: the list has nothing else to name it by, and an address is no secret. */
export async function addSuppression({ db }: SuppressionDeps, caller: Caller, { email }: { email: string }) {
  assertTeamWide(caller, TEAM_WIDE);
  const address = addressKey(email, 'email');
  return db.transaction().execute(async (tx) => {
    const row = await suppressions.addSuppression(tx, caller.teamId, address, 'MANUAL');
    await audit(tx, caller, { action: 'suppression.added', targetType: 'suppression', targetId: address });
    return toSuppression(row);
  });
}

export async function removeSuppression({ db }: SuppressionDeps, caller: Caller, { email }: { email: string }) {
  assertTeamWide(caller, TEAM_WIDE);
  const address = normalizeEmail(email)?.toLowerCase();
  if (!address) throw notFound('Suppression');
  return db.transaction().execute(async (tx) => {
    if (!(await suppressions.removeSuppression(tx, caller.teamId, address))) throw notFound('Suppression');
    await audit(tx, caller, { action: 'suppression.removed', targetType: 'suppression', targetId: address });
    return { success: true };
  });
}
