import nodemailer from 'nodemailer';
import type { DeliveryResult, RecipientRejection, Transport } from './types.js';

export type SmtpOptions = { url: string; poolSize: number; maxMessagesPerConnection: number; timeoutMs: number };

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
 * Relays through one SMTP server (SMTP_URL): a pool of connections, each reused for many messages
 * (PIPELINING, STARTTLS and AUTH as the server offers them), reopened when the server closes one.
 * Messages go as built, with an explicit envelope, so the DKIM signature stays intact.
 */
export function smtpTransport(options: SmtpOptions): Transport {
  const transporter = nodemailer.createTransport({
    url: options.url,
    pool: true,
    maxConnections: options.poolSize,
    maxMessages: options.maxMessagesPerConnection,
    connectionTimeout: options.timeoutMs,
    greetingTimeout: options.timeoutMs,
    socketTimeout: options.timeoutMs,
  } as nodemailer.TransportOptions);
  return {
    name: 'smtp',
    async send(_emailId, message, envelope) {
      try {
        const info = await transporter.sendMail({ envelope, raw: message });
        const rejected = ((info as { rejectedErrors?: SmtpError[] }).rejectedErrors ?? []).map(rejectionOf);
        return { kind: 'sent', response: info.response, rejected, feedback: [] };
      } catch (error) {
        return classifySmtpError(error as SmtpError);
      }
    },
    close: async () => transporter.close(),
  };
}
