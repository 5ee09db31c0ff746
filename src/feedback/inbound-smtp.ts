import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { SMTPServer, type SMTPServerAddress, type SMTPServerSession } from 'smtp-server';
import type { Config } from '../config.js';
import { routeForAddress, type InboundRouteRow } from '../data/inbound-routes.js';
import { authenticateMessage, authenticationResolver } from '../inbound/authenticate.js';
import { receive, type ReceiveDeps, type RouteClaim } from '../inbound/receive.js';
import type { Logger } from '../log.js';
import { asciiHostname, domainOf } from '../mail/address.js';
import { parseVerp, type VerpAddress } from '../mail/verp.js';
import type { Certificate } from '../smtp/certificate.js';
import { applyReport, resolveInboundRecipient, unsubscribeByMail, type FeedbackDeps } from './attribution.js';
import { ClientLimits } from '../smtp/client-limits.js';
import { listen, MessageCutOff, smtpError, spoolMessage } from '../smtp/listener-parts.js';
import { parseReport, type Report } from './reports.js';

export type InboundDeps = FeedbackDeps &
  ReceiveDeps & { log: Logger; config: FeedbackDeps['config'] & Pick<Config, 'inboundMaxBytes' | 'smtpListenerSessionTimeoutMs' | 'dataDir' | 'dnsServers' | 'dnsTimeoutMs' | 'inboundMxHost'> };
export type InboundListener = { port: number; close(): Promise<void> };

// RFC 5321 §4.5.3.1.8's least a server must take; a report names one message, routed mail may go to a few dozen.
const MAX_RECIPIENTS = 100;
const MAX_CLIENTS = 100;
// A receiving MTA sends its reports over a few connections, a dozen commands per message; a big
// one sends from several addresses of one network.
const MAX_CLIENTS_PER_ADDRESS = 10;
const MAX_CLIENTS_PER_NETWORK = 20;
const MAX_COMMANDS_PER_SESSION = 1000;
const SOCKET_TIMEOUT_MS = 60_000;

/** The route that takes an address, whatever its team: its own, else its domain's wildcard. */
async function routeOf(deps: Pick<InboundDeps, 'db'>, address: string) {
  const at = address.lastIndexOf('@');
  const domain = asciiHostname(domainOf(address));
  return at > 0 && domain ? routeForAddress(deps.db, domain, address.slice(0, at).toLowerCase()) : undefined;
}

/**
 * The listener the MX records point at: the return-path hosts' (bounces, complaints, mailto
 * unsubscribes) and the domains teams route. Recipients are checked at RCPT: Mailroom's VERP and
 * feedback-loop addresses of known emails and domains, and the addresses a route claims; anything
 * else is 550, so no one is ever sent a bounce for mail to an address nobody takes. A DSN or ARF
 * report becomes events through the one event function, a message to a List-Unsubscribe address
 * unsubscribes; feedback that cannot be read or attributed is logged and dropped (refusing it
 * after DATA would only make the sender bounce the bounce). Routed mail is authenticated, parsed
 * and stored, with its webhook calls or forward, before the 250. A database fault answers 451, so
 * the sender tries again later.
 */
export async function startInboundSmtp(deps: InboundDeps, options: { host: string; port: number; certificate: Certificate }): Promise<InboundListener> {
  const { log } = deps;
  const spool = path.join(deps.config.dataDir, 'inbound');
  await mkdir(spool, { recursive: true, mode: 0o700 });
  const resolver = authenticationResolver(deps.config.dnsServers, deps.config.dnsTimeoutMs);
  // The route each routed recipient was accepted for at RCPT: its mail goes where it was accepted
  // to go, without asking the database again.
  const routeTaking = new WeakMap<SMTPServerAddress, InboundRouteRow>();

  /** Routed mail: each route that claims some of the recipients keeps its own copy. */
  const receiveRouted = async (raw: Buffer, session: SMTPServerSession) => {
    const claims = new Map<string, RouteClaim>();
    for (const rcpt of session.envelope.rcptTo) {
      const route = routeTaking.get(rcpt);
      if (!route) continue;
      const key = `${route.team_id}:${route.id}`;
      const claim = claims.get(key) ?? claims.set(key, { route, recipients: [] }).get(key)!;
      claim.recipients.push(rcpt.address.toLowerCase());
    }
    if (claims.size === 0) return;
    const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
    const client = { clientAddress: session.remoteAddress ?? null, helo: session.hostNameAppearsAs ?? null };
    const authentication = await authenticateMessage(raw, { from, ...client }, { resolver, mta: deps.config.inboundMxHost });
    const stored = await receive(deps, { raw, from, ...client, receivedAt: new Date() }, [...claims.values()], authentication);
    log.info('inbound mail stored', { ids: stored.map((row) => row.id), bytes: raw.length, from });
  };

  const handleFeedback = async (raw: Buffer, session: SMTPServerSession) => {
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
    maxMessageBytes: deps.config.inboundMaxBytes,
  });
  const server: SMTPServer = new SMTPServer({
    banner: 'Mailroom inbound',
    name: options.host,
    // Mail from the world arrives unauthenticated; STARTTLS is offered, never required.
    disabledCommands: ['AUTH'],
    key: options.certificate.key,
    cert: options.certificate.cert,
    authOptional: true,
    logger: false,
    size: deps.config.inboundMaxBytes,
    rejectOversized: true,
    maxRecipients: MAX_RECIPIENTS,
    maxClients: MAX_CLIENTS,
    socketTimeout: SOCKET_TIMEOUT_MS,
    closeTimeout: 5_000,
    onConnect: (session, callback) => limits.admit(server, session, callback),
    onClose: (session) => limits.release(session),
    onRcptTo(address, _session, callback) {
      const claimed = async () => {
        if ((await resolveInboundRecipient(deps, address.address)) !== null) return true;
        const route = await routeOf(deps, address.address);
        if (route) routeTaking.set(address, route);
        return route !== undefined;
      };
      claimed().then(
        (taken) => callback(taken ? undefined : smtpError(550, '5.1.1 No such recipient here')),
        (error: unknown) => {
          log.error('checking an inbound recipient failed', { error });
          callback(smtpError(451, '4.3.0 Temporary failure, try again later'));
        },
      );
    },
    onData(stream, session, callback) {
      spoolMessage(stream, spool)
        .then(async (raw) => {
          if (raw === null) {
            log.warn('inbound mail refused: over the size limit', { limit: deps.config.inboundMaxBytes });
            return callback(smtpError(552, '5.3.4 Message too big'));
          }
          // Feedback first: applied twice it counts once (each report keys its events), so a fault
          // storing routed mail after it, answered 451 and sent again, repeats nothing.
          await handleFeedback(raw, session);
          await receiveRouted(raw, session);
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
