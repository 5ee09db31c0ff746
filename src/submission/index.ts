import type { AppDeps } from '../http/deps.js';
import { AuthThrottle } from '../services/auth-throttle.js';
import type { Certificate } from '../smtp/certificate.js';
import { startSubmissionListener, type SubmissionListener } from './listener.js';

export type Submission = { port: number | null; tlsPort: number | null; close(): Promise<void> };

/**
 * SMTP submission as configured: the STARTTLS listener, the implicit-TLS one, either or neither,
 * sharing one certificate and one count of failed logins per client address.
 */
export async function startSubmission(deps: AppDeps, certificateOf: () => Promise<Certificate>): Promise<Submission> {
  const { config } = deps;
  const ports = [
    { port: config.submissionPort, secure: false, name: 'SMTP_SUBMISSION_PORT' },
    { port: config.submissionTlsPort, secure: true, name: 'SMTP_SUBMISSION_TLS_PORT' },
  ];
  if (ports.every(({ port }) => port === null)) return { port: null, tlsPort: null, close: async () => {} };
  const certificate = await certificateOf();
  const throttle = new AuthThrottle(config.authFailuresPerMinute);
  const listeners: (SubmissionListener | null)[] = [];
  try {
    for (const { port, secure, name } of ports) {
      if (port === null) {
        listeners.push(null);
        continue;
      }
      try {
        listeners.push(await startSubmissionListener(deps, { host: config.submissionHost, port, secure, certificate, throttle }));
      } catch (error) {
        throw new Error(`SMTP submission could not start on ${config.submissionHost}:${port} (${name}): ${(error as Error).message}`);
      }
    }
  } catch (error) {
    await Promise.all(listeners.map((listener) => listener?.close()));
    throw error;
  }
  return {
    port: listeners[0]?.port ?? null,
    tlsPort: listeners[1]?.port ?? null,
    close: async () => {
      await Promise.all(listeners.map((listener) => listener?.close()));
    },
  };
}
