import { SMTPServer, type SMTPServerAuthentication, type SMTPServerSession } from 'smtp-server';
import { ApiError } from '../errors.js';
import { normalizeEmail } from '../mail/address.js';
import { clientKeys } from '../smtp/client-keys.js';
import { ClientLimits } from '../smtp/client-limits.js';
import { listen, MessageCutOff, readMessage, smtpError } from '../smtp/listener-parts.js';
import type { AppDeps } from '../http/deps.js';
import { authenticate, type AuthContext } from '../services/api-keys.js';
import { submitEmail } from '../services/emails.js';
import { AuthThrottle } from '../services/auth-throttle.js';
import type { Certificate } from '../smtp/certificate.js';
import { assertTakenByApi, readSubmission } from './message.js';

export type SubmissionListener = { port: number; close(): Promise<void> };

// What a listener open to the internet allows one client: a handful of applications behind one
// address (a NAT, a host of many sites) each keeping a small pool of connections.
const MAX_CLIENTS = 1000;
const MAX_CLIENTS_PER_ADDRESS = 50;
const MAX_CLIENTS_PER_NETWORK = 100;
// Five or six commands a message: a pooled connection sends a thousand messages and more.
const MAX_COMMANDS_PER_SESSION = 20_000;
// The envelope may name every recipient the API takes in To, Cc and Bcc together.
const MAX_RECIPIENTS = 150;
const SOCKET_TIMEOUT_MS = 120_000;

/** A service's refusal as the SMTP reply an application can act on; null for a fault of ours. */
function replyFor(error: unknown): Error | null {
  if (!(error instanceof ApiError)) return null;
  const detail = error.details?.map((problem) => `${problem.path}: ${problem.message}`).join('; ') ?? error.message;
  switch (error.code) {
    case 'RATE_LIMITED':
      return smtpError(451, `4.7.0 ${error.message}`);
    case 'FORBIDDEN':
      return smtpError(550, `5.7.1 ${error.message}`);
    case 'NOT_FOUND':
      return smtpError(550, `5.1.0 ${error.message}`);
    case 'PAYLOAD_TOO_LARGE':
      return smtpError(552, `5.3.4 Over the limit for an email: ${detail}`);
    default:
      return error.details?.some((problem) => problem.path === 'from')
        ? smtpError(553, `5.7.1 ${detail}`)
        : smtpError(550, `5.6.0 ${detail}`);
  }
}

const callerOf = (session: SMTPServerSession) => session.user as AuthContext;

/**
 * One SMTP submission listener: STARTTLS on a plain port, or TLS from the first byte (`secure`).
 * A client authenticates with AUTH PLAIN or LOGIN over TLS, any user name and an API key as the
 * password; each message it sends becomes one email of the key's team through the service behind
 * `POST /v1/emails`, and the 250 reply to DATA names its id.
 */
export async function startSubmissionListener(
  deps: AppDeps,
  options: { host: string; port: number; secure: boolean; certificate: Certificate; throttle: AuthThrottle },
): Promise<SubmissionListener> {
  const { log, config } = deps;
  const { throttle } = options;
  const refusedFor = (address: string) => {
    const until = throttle.blockedUntil(clientKeys(address).client);
    if (until === null) return null;
    return smtpError(421, `4.7.0 Too many failed logins from your address; try again in ${Math.ceil((until - Date.now()) / 1000)} s`);
  };

  const limits = new ClientLimits({
    perClient: MAX_CLIENTS_PER_ADDRESS,
    perNetwork: MAX_CLIENTS_PER_NETWORK,
    commandsPerSession: MAX_COMMANDS_PER_SESSION,
    commandMs: SOCKET_TIMEOUT_MS,
    sessionMs: config.smtpListenerSessionTimeoutMs,
    maxMessageBytes: config.submissionMaxBytes,
  });
  const server: SMTPServer = new SMTPServer({
    banner: 'Mailroom submission',
    name: new URL(config.publicUrl).hostname,
    secure: options.secure,
    key: options.certificate.key,
    cert: options.certificate.cert,
    minVersion: 'TLSv1.2',
    authMethods: ['PLAIN', 'LOGIN'],
    // AUTH only over TLS: on the plain port, 538 until STARTTLS.
    allowInsecureAuth: false,
    disabledCommands: [],
    logger: false,
    size: config.submissionMaxBytes,
    maxRecipients: MAX_RECIPIENTS,
    maxClients: MAX_CLIENTS,
    socketTimeout: SOCKET_TIMEOUT_MS,
    closeTimeout: 5_000,
    onConnect(session, callback) {
      const refused = refusedFor(session.remoteAddress);
      if (refused) return callback(refused);
      limits.admit(server, session, callback);
    },
    onClose: (session) => limits.release(session),
    onAuth(auth: SMTPServerAuthentication, session, callback) {
      const refused = refusedFor(session.remoteAddress);
      if (refused) return callback(refused);
      authenticate(deps, auth.password ?? '', session.remoteAddress ?? null).then(
        (caller) => {
          if (caller) return callback(null, { user: caller });
          const delay = throttle.fail(clientKeys(session.remoteAddress).client);
          log.warn('SMTP submission login refused: not an API key', { client: session.remoteAddress, username: auth.username });
          const wrong = () => callback(refusedFor(session.remoteAddress) ?? smtpError(535, '5.7.8 Authentication failed: the password must be an API key'));
          if (delay > 0) setTimeout(wrong, delay);
          else wrong();
        },
        (error: unknown) => {
          log.error('checking an SMTP submission login failed', { error });
          callback(smtpError(454, '4.7.0 Temporary authentication failure, try again later'));
        },
      );
    },
    onMailFrom(_address, session, callback) {
      const caller = callerOf(session);
      // The shared limiter answers after a trip to the database when its slice is used up; it never rejects.
      void Promise.resolve(deps.rateLimiter.take(caller.teamId, caller.rateLimitPerSecond ?? config.rateLimitPerSecond)).then((decision) => {
        if (decision.allowed) return callback();
        callback(smtpError(451, `4.7.0 Rate limit of ${decision.limit} messages per second exceeded; try again in ${decision.resetSeconds} s`));
      });
    },
    onRcptTo(address, _session, callback) {
      callback(normalizeEmail(address.address) ? undefined : smtpError(553, `5.1.3 ${address.address} is not a valid email address`));
    },
    onData(stream, session, callback) {
      readMessage(stream)
        .then(async (raw) => {
          // smtp-server itself only refuses one declared too big at MAIL (SIZE=); one that grew
          // too big in DATA is refused here, else the client would hear 250 for nothing stored.
          if (raw === null) return callback(smtpError(552, `5.3.4 Message too big: the limit is ${config.submissionMaxBytes} bytes`));
          const recipients = session.envelope.rcptTo.map((rcpt) => rcpt.address);
          const submitted = await readSubmission(raw, recipients).catch((error: unknown) => {
            log.debug('a submitted message could not be parsed', { error });
            return null;
          });
          if (!submitted) return callback(smtpError(550, '5.6.0 The message could not be parsed as MIME'));
          const { email, dropped } = submitted;
          if (dropped.length > 0) log.debug('header fields of a submitted message not kept', { fields: dropped });
          assertTakenByApi(email);
          const { emailId } = await submitEmail(deps, callerOf(session), { email });
          callback(null, `2.0.0 Queued as ${emailId}`);
        })
        .catch((error: unknown) => {
          if (error instanceof MessageCutOff) {
            log.debug('a client left in the middle of a message; nothing stored', { client: session.remoteAddress });
            return callback(error);
          }
          const reply = replyFor(error);
          if (reply) return callback(reply);
          log.error('accepting a submitted message failed; the client may try again', { error });
          callback(smtpError(451, '4.3.0 Temporary failure, try again later'));
        });
    },
  });
  // A client that drops its connection or talks nonsense is its own problem, never the listener's.
  server.on('error', (error) => log.debug('SMTP submission connection error', { error }));

  const listening = await listen(server, options.host, options.port);
  log.info('SMTP submission listening', { host: options.host, port: listening.port, tls: options.secure ? 'implicit' : 'STARTTLS' });
  return listening;
}
