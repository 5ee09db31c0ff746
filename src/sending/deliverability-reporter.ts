import { addDeliveryStats, dropOldDeliverability, replaceDestinationStates, type DestinationStateRow, type OutcomeCounts } from '../data/deliverability.js';
import type { Deps } from '../deps.js';
import { startWorkerLoop } from '../workers/loop.js';
import type { DestinationState } from './transports/direct/index.js';

// Outcomes and destination states reach the database this often: the view is this fresh.
const REPORT_EVERY_MS = 2_000;
// Minute counts are kept a day; the view reads the last hour.
const KEEP_STATS_MS = 86_400_000;
const MINUTE_MS = 60_000;

/** Outcomes of direct delivery counted as they come, per team, destination and minute, until the next report takes them. */
export class DeliveryOutcomes {
  private counts = new Map<string, { teamId: number; destination: string; minute: Date } & OutcomeCounts>();

  constructor(private readonly metrics: Pick<Deps['metrics'], 'directDeliveries'>) {}

  readonly count = (teamId: number, destination: string, status: keyof OutcomeCounts, n: number) => {
    this.metrics.directDeliveries(destination, status, n);
    this.entry(teamId, destination, new Date(Math.floor(Date.now() / MINUTE_MS) * MINUTE_MS))[status] += n;
  };

  private entry(teamId: number, destination: string, minute: Date) {
    const key = `${teamId} ${destination} ${minute.getTime()}`;
    let entry = this.counts.get(key);
    if (!entry) this.counts.set(key, (entry = { teamId, destination, minute, delivered: 0, deferred: 0, bounced: 0 }));
    return entry;
  }

  /** The counts so far, which are forgotten here. */
  take() {
    const taken = [...this.counts.values()];
    this.counts = new Map();
    return taken;
  }

  /** Counts a report failed to write, counted again for the next one. */
  giveBack(rows: ReturnType<DeliveryOutcomes['take']>) {
    for (const row of rows) {
      const entry = this.entry(row.teamId, row.destination, row.minute);
      entry.delivered += row.delivered;
      entry.deferred += row.deferred;
      entry.bounced += row.bounced;
    }
  }
}

// The row of a destination's own state (a pause), whoever's mail it holds: no team has id 0.
const EVERY_TEAM = 0;

/** Each destination's attempts as rows per team, and a paused destination's pause, for destination_states. */
function stateRows(destinations: DestinationState[]): DestinationStateRow[] {
  return destinations.flatMap((d) => [
    ...[...d.teams].map(([teamId, counts]) => ({ teamId, destination: d.name, queued: counts.queued, inFlight: counts.inFlight, limit: d.limit, pausedUntil: d.pausedUntil })),
    ...(d.pausedUntil ? [{ teamId: EVERY_TEAM, destination: d.name, queued: 0, inFlight: 0, limit: d.limit, pausedUntil: d.pausedUntil }] : []),
  ]);
}

/**
 * Writes what direct delivery does to the database every couple of seconds, for the deliverability
 * view of any process: the outcomes counted since the last report, and what this worker's
 * destinations hold now. A stop writes a last report and takes this worker's states away.
 */
export function startDeliverabilityReporter(deps: Pick<Deps, 'db' | 'log'>, parts: { outcomes: DeliveryOutcomes; destinations: () => DestinationState[]; workerId: string }) {
  let lastDrop = 0;
  const report = async (final: boolean) => {
    const rows = parts.outcomes.take();
    try {
      await addDeliveryStats(deps.db, rows);
    } catch (error) {
      parts.outcomes.giveBack(rows);
      throw error;
    }
    await replaceDestinationStates(deps.db, parts.workerId, final ? [] : stateRows(parts.destinations()), new Date());
    if (Date.now() - lastDrop > KEEP_STATS_MS / 24) {
      lastDrop = Date.now();
      // A worker killed before its stop leaves its states behind; an hour later they go.
      await dropOldDeliverability(deps.db, new Date(Date.now() - KEEP_STATS_MS), new Date(Date.now() - KEEP_STATS_MS / 24));
    }
  };
  const loop = startWorkerLoop({
    pass: () => report(false),
    pollMs: REPORT_EVERY_MS,
    onError: (error) => deps.log.warn('reporting deliverability failed; the next report tries again', { error }),
  });
  return {
    async stop() {
      await loop.stop();
      await report(true).catch((error: unknown) => deps.log.warn('the last deliverability report failed', { error }));
    },
  };
}
