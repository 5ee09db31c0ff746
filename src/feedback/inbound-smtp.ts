import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { parseVerp, type VerpAddress } from '../mail/verp.js';
import { applyReport, resolveInboundRecipient, unsubscribeByMail, type FeedbackDeps } from './attribution.js';
import { ClientLimits } from '../smtp/client-limits.js';
import { listen, MessageCutOff, readMessage, smtpError } from '../smtp/listener-parts.js';
import { parseReport, type Report } from './reports.js';

export type InboundDeps = FeedbackDeps & { log: Logger; config: FeedbackDeps['config'] & Pick<Config, 'inboundSmtpMaxBytes' | 'smtpListenerSessionTimeoutMs'> };
export type InboundListener = { port: number; close(): Promise<void> };

// A report names one message; more of our addresses than this in one transaction is not feedback.
const MAX_RECIPIENTS = 10;
const MAX_CLIENTS = 100;
// A receiving MTA sends its reports over a few connections, a dozen commands per message; a big
// one sends from several addresses of one network.
const MAX_CLIENTS_PER_ADDRESS = 10;
const MAX_CLIENTS_PER_NETWORK = 20;
const MAX_COMMANDS_PER_SESSION = 1000;
const SOCKET_TIMEOUT_MS = 60_000;

/**
 * The listener the return-path hosts' MX records point at. Recipients are checked at RCPT (only
 * Mailroom's VERP and feedback-loop addresses of known emails and domains); a DSN or ARF report
 * becomes events through the one event function, a message to a List-Unsubscribe address
 * unsubscribes. Mail that cannot be read or attributed is logged and dropped: refusing it after
 * DATA would only make the sender bounce the bounce. A database fault answers 451, so the sender
 * tries again later.
 */
export async function startInboundSmtp(deps: InboundDeps, options: { host: string; port: number }): Promise<InboundListener> {
  const { log } = deps;

  const handle = async (raw: Buffer, session: SMTPServerSession) => {
    const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
    const targets = session.envelope.rcptTo.map((rcpt) => parseVerp(rcpt.address)).filter((to): to is VerpAddress => to !== null);
    let report: Report | null | undefined;
    for (const to of targets) {
      if (to.kind === 'unsubscribe') {
        const done = await unsubscribeByMail(deps, to);
        log.info(done ? 'unsubscribed by mail' : 'unsubscribe mail dropped: not a campaign email', { emailId: to.emailId, from });
        continue;
      }
      if (report === undefined) {
        report = await parseReport(raw).catch((error: unknown) => {
          log.warn('inbound mail could not be parsed', { error, from, bytes: raw.length });
          return null;
        });
      }
      if (!report) {
        log.warn('inbound mail dropped: not a delivery status notification or feedback report', { from, to: to.host, bytes: raw.length });
        continue;
      }
      const applied = await applyReport(deps, to, report);
      if (applied) log.info('feedback report applied', { kind: report.kind, ...applied });
      else log.warn('feedback report dropped: it proves no email sent from this domain, or names none of its recipients', { kind: report.kind, from, to: to.host, original: report.original });
    }
  };

  const limits = new ClientLimits({
    perClient: MAX_CLIENTS_PER_ADDRESS,
    perNetwork: MAX_CLIENTS_PER_NETWORK,
    commandsPerSession: MAX_COMMANDS_PER_SESSION,
    commandMs: SOCKET_TIMEOUT_MS,
    sessionMs: deps.config.smtpListenerSessionTimeoutMs,
    maxMessageBytes: deps.config.inboundSmtpMaxBytes,
  });
  const server: SMTPServer = new SMTPServer({
    banner: 'Mailroom feedback receiver',
    name: options.host,
    // Bounces arrive unauthenticated and, on a private host, in the clear.
    disabledCommands: ['AUTH', 'STARTTLS'],
    authOptional: true,
    logger: false,
    size: deps.config.inboundSmtpMaxBytes,
    rejectOversized: true,
    maxRecipients: MAX_RECIPIENTS,
    maxClients: MAX_CLIENTS,
    socketTimeout: SOCKET_TIMEOUT_MS,
    closeTimeout: 5_000,
    onConnect: (session, callback) => limits.admit(server, session, callback),
    onClose: (session) => limits.release(session),
    onRcptTo(address, _session, callback) {
      resolveInboundRecipient(deps, address.address).then(
        (to) => callback(to ? undefined : smtpError(550, '5.1.1 No such recipient here')),
        (error: unknown) => {
          log.error('checking an inbound recipient failed', { error });
          callback(smtpError(451, '4.3.0 Temporary failure, try again later'));
        },
      );
    },
    onData(stream, session, callback) {
      readMessage(stream)
        .then(async (raw) => {
          if (raw === null) {
            log.warn('inbound mail refused: over the size limit', { limit: deps.config.inboundSmtpMaxBytes });
            return callback(smtpError(552, '5.3.4 Message too big'));
          }
          await handle(raw, session);
          callback();
        })
        .catch((error: unknown) => {
          if (error instanceof MessageCutOff) return callback(error);
          log.error('handling inbound mail failed; the sender will try again', { error });
          callback(smtpError(451, '4.3.0 Temporary failure, try again later'));
        });
    },
  });
  // A client that drops its connection or talks nonsense is its own problem, never the listener's.
  server.on('error', (error) => log.debug('inbound SMTP connection error', { error }));

  const listening = await listen(server, options.host, options.port);
  log.info('inbound SMTP listening', { host: options.host, port: listening.port });
  return listening;
}
