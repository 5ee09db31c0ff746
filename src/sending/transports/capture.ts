import { access, constants, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Feedback, Transport } from './types.js';

/** Recipients that make the capture transport report what a receiver would. */
export const SIMULATOR = {
  bounce: 'bounce@simulator.test',
  complaint: 'complaint@simulator.test',
  delayed: 'delayed@simulator.test',
  deferred: 'deferred@simulator.test',
} as const;

function simulate(recipients: string[]): Feedback[] {
  const lower = recipients.map((address) => address.toLowerCase());
  if (lower.includes(SIMULATOR.bounce)) {
    return [{
      status: 'BOUNCED',
      data: { bounceType: 'Permanent', recipients: [SIMULATOR.bounce], diagnostic: 'smtp; 550 5.1.1 simulated: mailbox does not exist' },
      suppress: { addresses: [SIMULATOR.bounce], reason: 'HARD_BOUNCE' },
    }];
  }
  if (lower.includes(SIMULATOR.complaint)) {
    return [
      { status: 'DELIVERED', data: { simulated: true } },
      { status: 'COMPLAINED', data: { recipients: [SIMULATOR.complaint], feedbackType: 'abuse' }, suppress: { addresses: [SIMULATOR.complaint], reason: 'COMPLAINT' } },
    ];
  }
  if (lower.includes(SIMULATOR.delayed)) {
    return [{ status: 'DELIVERY_DELAYED', data: { recipients: [SIMULATOR.delayed], diagnostic: 'smtp; 421 4.4.7 simulated: delivery delayed' } }];
  }
  return [{ status: 'DELIVERED', data: { capturedTo: 'outbox' } }];
}

/**
 * The embedded default: each message is saved as DATA_DIR/outbox/<emailId>.eml and counts as
 * delivered, so a fresh install sends "for real" with nothing else set up.
 */
export function captureTransport(outbox: string): Transport {
  // Messages carry recipients' addresses and content: only the service's user may read them.
  const ready = mkdir(outbox, { recursive: true, mode: 0o700 });
  return {
    name: 'capture',
    async send(emailId, message, envelope) {
      await ready;
      // As a relay that answers "try again later": nothing is taken, and the email waits for its retry.
      if (envelope.to.some((address) => address.toLowerCase() === SIMULATOR.deferred)) {
        return { kind: 'temporary', response: '451 4.3.0 simulated: try again later', code: 451 };
      }
      const file = path.join(outbox, `${emailId}.eml`);
      await writeFile(file, message, { mode: 0o600 });
      return { kind: 'sent', response: `250 captured as ${path.basename(file)}`, rejected: [], feedback: simulate(envelope.to) };
    },
    async check() {
      await ready;
      await access(outbox, constants.W_OK);
    },
    close: async () => {},
  };
}
