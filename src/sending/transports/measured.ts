import type { Metrics } from '../../metrics/metrics.js';
import type { DeliveryResult, Transport } from './types.js';

/** The reply code an answer carries; an accepted message whose reply names none was still a 2xx. */
function replyCode(result: DeliveryResult): number | null {
  if (result.kind === 'recipients') {
    // The answer of the first recipient tried; one postponed untried is no reply.
    const tried = result.results.find((r) => r.status !== 'postponed');
    if (!tried) return null;
    return tried.status === 'delivered' ? 250 : tried.code;
  }
  if (result.kind !== 'sent') return result.code;
  const code = Number(/^[2-5]\d\d/.exec(result.response)?.[0]);
  return Number.isNaN(code) ? 250 : code;
}

/**
 * The transport, each hand-over timed and its reply class counted. Every member of the interface is
 * forwarded by name, so one added to Transport fails to compile here until it is forwarded too.
 */
export function measuredTransport(transport: Transport, metrics: Pick<Metrics, 'smtpReply'>): Transport {
  return {
    name: transport.name,
    async send(emailId, message, envelope, context) {
      const started = performance.now();
      const seconds = () => (performance.now() - started) / 1000;
      try {
        const result = await transport.send(emailId, message, envelope, context);
        metrics.smtpReply(replyCode(result), seconds());
        return result;
      } catch (error) {
        metrics.smtpReply(null, seconds());
        throw error;
      }
    },
    ...(transport.admit && { admit: transport.admit.bind(transport) }),
    check: () => transport.check(),
    close: () => transport.close(),
  };
}
