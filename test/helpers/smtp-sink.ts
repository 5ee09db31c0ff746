import type { AddressInfo, Socket } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

export type Received = { mailFrom: string; rcptTo: string[]; raw: Buffer; at: number; secure: boolean; user: string | null };

/** What the sink answers; `null` accepts. */
export type SinkRule = {
  /** `'hang'`: take the connection and never say a word, not even the greeting. */
  connect?: () => 'hang' | null;
  rcpt?: (address: string) => SmtpReply | null;
  /**
   * At the end of DATA. `'drop'`: keep the whole message, as a receiver that has it queued, but
   * close the connection before replying, so the sender cannot know it was taken.
   */
  data?: (message: Received) => SmtpReply | 'drop' | null;
};
export type SmtpReply = { code: number; message: string };

export type SmtpSink = {
  port: number;
  /** SMTP_URL for Mailroom. */
  url: string;
  received: Received[];
  /** Every reply other than acceptance, as `code message`. */
  refusals: string[];
  /** Connections left hanging by a `connect: 'hang'` rule, and messages dropped by a `'drop'` one. */
  hung: number;
  dropped: number;
  rule: SinkRule;
  /** Sessions open right now, of any client. */
  openSessions(): number;
  /** Stops listening (connection refused) until `start()`; the port stays the same. */
  stop(): Promise<void>;
  start(): Promise<void>;
  close(): Promise<void>;
  /** Messages received for the email, found by the id in its Message-ID. */
  forEmail(emailId: string): Received[];
};

const reply = (r: SmtpReply) => Object.assign(new Error(r.message), { responseCode: r.code });

/**
 * A real SMTP server on loopback that keeps every message it accepts. `options` adds what a test
 * needs (authentication, STARTTLS); by default it takes mail from anyone, in plain text.
 */
export async function startSmtpSink(
  options: Partial<SMTPServerOptions> & { urlQuery?: string; auth?: { user: string; pass: string }; replyDelayMs?: number } = {},
): Promise<SmtpSink> {
  const received: Received[] = [];
  const refusals: string[] = [];
  const sink = { rule: {} as SinkRule, hung: 0, dropped: 0 };
  const { urlQuery, auth, replyDelayMs = 0, ...serverOptions } = options;
  const make = () =>
    new SMTPServer({
      disabledCommands: auth ? [] : ['AUTH', 'STARTTLS'],
      authOptional: !auth,
      logger: false,
      size: 50 * 1024 * 1024,
      maxClients: 100,
      onAuth(credentials, _session, callback) {
        if (auth && credentials.username === auth.user && credentials.password === auth.pass) return callback(null, { user: auth.user });
        return callback(reply({ code: 535, message: 'Authentication failed' }));
      },
      onConnect(_session, callback) {
        if (sink.rule.connect?.() !== 'hang') return callback();
        // Never called back: the connection stays open and the greeting never comes.
        sink.hung++;
      },
      onRcptTo(address, _session, callback) {
        const answer = sink.rule.rcpt?.(address.address) ?? null;
        if (answer) refusals.push(`${answer.code} ${answer.message}`);
        callback(answer ? reply(answer) : undefined);
      },
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          const message: Received = {
            mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            rcptTo: session.envelope.rcptTo.map((r) => r.address),
            raw: Buffer.concat(chunks),
            at: Date.now(),
            secure: session.secure,
            user: (session.user as string | undefined) ?? null,
          };
          const answer = sink.rule.data?.(message) ?? null;
          if (answer === 'drop') {
            received.push(message);
            sink.dropped++;
            // Before any reply: the sender has sent the final dot and hears nothing back.
            const connection = [...server.connections].find((c) => (c as unknown as { id: string }).id === session.id);
            (connection as unknown as { _socket: Socket })._socket.destroy();
            return;
          }
          if (answer) {
            refusals.push(`${answer.code} ${answer.message}`);
            return callback(reply(answer));
          }
          received.push(message);
          // A slower receiver keeps messages in flight longer, as a real one over a network does.
          if (replyDelayMs > 0) setTimeout(() => callback(), replyDelayMs);
          else callback();
        });
      },
      ...serverOptions,
    });

  // A client that dies mid-session (kill -9) resets its connection; the sink just drops it.
  const quiet = (smtp: SMTPServer) => smtp.on('error', () => {});
  let server = quiet(make());
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve((server.server.address() as AddressInfo).port));
    });
  const port = await listen(0);
  const credentials = auth ? `${auth.user}:${auth.pass}@` : '';
  const close = () => new Promise<void>((resolve) => server.close(() => resolve()));

  return {
    port,
    url: `smtp://${credentials}127.0.0.1:${port}${urlQuery ? `/?${urlQuery}` : ''}`,
    received,
    refusals,
    get hung() {
      return sink.hung;
    },
    get dropped() {
      return sink.dropped;
    },
    openSessions: () => server.connections.size,
    get rule() {
      return sink.rule;
    },
    set rule(rule: SinkRule) {
      sink.rule = rule;
    },
    stop: close,
    async start() {
      server = quiet(make());
      await listen(port);
    },
    close,
    forEmail: (emailId) => received.filter((message) => messageIdOf(message.raw)?.startsWith(`${emailId}@`)),
  };
}

export function messageIdOf(raw: Buffer): string | undefined {
  return /^Message-ID: <([^>]+)>/im.exec(raw.toString('latin1'))?.[1];
}
