import net from 'node:net';
import nodemailer from 'nodemailer';
import type { DeliveryResult, RecipientRejection, Transport } from './types.js';

export type SmtpOptions = { url: string; poolSize: number; maxMessagesPerConnection: number; timeoutMs: number };

type GetSocket = (
  options: { host?: string; port?: number | string; secure?: boolean },
  callback: (error: null, socket: { connection: net.Socket } | false) => void,
) => void;

type SmtpError = Error & {
  code?: string;
  command?: string;
  response?: string;
  responseCode?: number;
  recipient?: string;
  rejectedErrors?: SmtpError[];
};

const rejectionOf = (error: SmtpError): RecipientRejection => ({
  address: error.recipient ?? '',
  response: error.response ?? error.message,
  code: error.responseCode ?? null,
});

const isPermanent = (code: number | null | undefined) => code !== null && code !== undefined && code >= 500 && code < 600;

/**
 * Sorts an SMTP failure. Only the receiver refusing the message or its recipients is permanent;
 * trouble on our side of the relay (authentication, MAIL FROM, the connection) is retried, so a
 * misconfiguration cannot bounce and suppress a whole list.
 */
export function classifySmtpError(error: SmtpError): DeliveryResult {
  const response = error.response ?? error.message;
  const code = error.responseCode ?? null;
  if (error.rejectedErrors?.length) {
    const rejected = error.rejectedErrors.map(rejectionOf);
    if (rejected.every((rejection) => isPermanent(rejection.code))) return { kind: 'permanent', response, code, rejected };
    return { kind: 'temporary', response, code };
  }
  const messageRefused = error.command === 'DATA' || error.code === 'EMESSAGE';
  if (messageRefused && isPermanent(code)) return { kind: 'permanent', response, code, rejected: [] };
  return { kind: 'temporary', response, code };
}

/**
 * Joins what is written to the socket in one tick into one write. nodemailer writes a message in
 * several pieces (its body, then the terminating dot line), and with Nagle's algorithm off each
 * would be a system call and a packet of its own, which on a fast link costs more than the SMTP
 * exchange itself.
 */
function writeOncePerTick(socket: net.Socket): void {
  const write = socket.write;
  socket.write = function (this: net.Socket, ...args: Parameters<net.Socket['write']>) {
    if (this.writableCorked === 0) {
      this.cork();
      process.nextTick(() => this.uncork());
    }
    return write.apply(this, args);
  } as net.Socket['write'];
}

/**
 * Relays through one SMTP server (SMTP_URL): a pool of connections, each reused for many messages
 * (PIPELINING, STARTTLS and AUTH as the server offers them), reopened when the server closes one.
 * Messages go as built, with an explicit envelope, so the DKIM signature stays intact.
 */
export function smtpTransport(options: SmtpOptions): Transport {
  // nodemailer reads a URL's settings from its query and ignores the rest of an options object
  // that names a URL, so the pool settings travel in the query too (the operator's own win).
  const url = new URL(options.url);
  const pool = {
    pool: 'true',
    maxConnections: String(options.poolSize),
    maxMessages: String(options.maxMessagesPerConnection),
    connectionTimeout: String(options.timeoutMs),
    greetingTimeout: String(options.timeoutMs),
    socketTimeout: String(options.timeoutMs),
  };
  for (const [name, value] of Object.entries(pool)) if (!url.searchParams.has(name)) url.searchParams.set(name, value);
  const transporter = nodemailer.createTransport(url.toString());
  // nodemailer leaves Nagle's algorithm on: the small last write of each message then waits for
  // the receiver's delayed ACK (40 ms on Linux), which caps a connection near 25 messages/s. So the
  // socket is opened here with it off. When that fails, nodemailer is left to connect by itself:
  // its own failure path frees the pool slot (one reported from here would hold it for good).
  (transporter.transporter as unknown as { getSocket: GetSocket }).getSocket = (socketOptions, callback) => {
    const socket = net.connect({ host: socketOptions.host ?? 'localhost', port: Number(socketOptions.port) || (socketOptions.secure ? 465 : 587) });
    socket.setNoDelay(true);
    writeOncePerTick(socket);
    let settled = false;
    const settle = (connected: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (connected) return callback(null, { connection: socket });
      socket.destroy();
      callback(null, false);
    };
    const timer = setTimeout(() => settle(false), options.timeoutMs);
    socket.once('connect', () => settle(true));
    // Stays attached: once connected nodemailer listens too, and this one does nothing.
    socket.on('error', () => settle(false));
  };
  return {
    name: 'smtp',
    async send(emailId, message, envelope) {
      try {
        // A Message-ID given spares nodemailer drawing a random one for a message it sends as built.
        const info = await transporter.sendMail({ envelope, raw: message, messageId: emailId });
        const rejected = ((info as { rejectedErrors?: SmtpError[] }).rejectedErrors ?? []).map(rejectionOf);
        // The receiving server took responsibility for the message: that is what DELIVERED means
        // here. A relay that later fails to pass it on reports back with a DSN (the inbound listener).
        return { kind: 'sent', response: info.response, rejected, feedback: [{ status: 'DELIVERED', data: { response: info.response } }] };
      } catch (error) {
        return classifySmtpError(error as SmtpError);
      }
    },
    // Connects, greets and logs in as a send would, then quits: the relay's answer right now.
    check: async () => {
      await transporter.verify();
    },
    close: async () => transporter.close(),
  };
}
