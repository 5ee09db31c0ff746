import { PAYLOAD_VERSION } from '../events/contract.js';

export type CallRecord = { id: string; type: string; team_id: number; data: Record<string, unknown>; created_at: Date };

/**
 * A call's body as the receiver gets it (upstream's shape): the same on every attempt but for
 * `attempt`, which counts from 1.
 */
export function callBody(call: CallRecord, attempt: number) {
  return {
    id: call.id,
    type: call.type,
    version: PAYLOAD_VERSION,
    createdAt: call.created_at.toISOString(),
    teamId: call.team_id,
    data: call.data,
    attempt,
  };
}
