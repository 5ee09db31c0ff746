import { teamDestinations } from '../data/deliverability.js';
import type { Deps } from '../deps.js';
import { assertTeamWide, type Caller } from './caller.js';

export type DeliverabilityDeps = Pick<Deps, 'db'>;

const HOUR_MS = 3_600_000;
// Worker reports come every 2 s; one older than this is from a worker that stopped.
const FRESH_MS = 30_000;

/**
 * The team's direct-delivery destinations: mail waiting for each and under way, what the last hour
 * brought (recipients delivered, deferred, bounced), and until when a destination is paused. Its
 * destinations mix every domain's mail, so a key scoped to one domain is refused.
 */
export async function listDestinations(deps: DeliverabilityDeps, caller: Caller) {
  assertTeamWide(caller, 'destinations carry the mail of every domain of the team');
  const now = new Date();
  const rows = await teamDestinations(deps.db, caller.teamId, { since: new Date(now.getTime() - HOUR_MS), freshAfter: new Date(now.getTime() - FRESH_MS), now });
  return {
    data: rows.map((row) => ({
      destination: row.destination,
      queued: row.queued,
      inFlight: row.inFlight,
      lastHour: { delivered: row.delivered, deferred: row.deferred, bounced: row.bounced },
      pausedUntil: row.pausedUntil?.toISOString() ?? null,
    })),
  };
}
