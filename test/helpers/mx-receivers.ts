import type { AddressInfo, Socket } from 'node:net';
import { SMTPServer } from 'smtp-server';

export type MxMessage = {
  /** The address of the receiver that took it, e.g. `127.0.0.2`. */
  receiver: string;
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
  at: number;
  /** Sent after STARTTLS. */
  secure: boolean;
  /** The EHLO/HELO name of the session, lower-cased (as smtp-server keeps it). */
  helo: string;
  /** The client's source address, as the receiver saw it. */
  remoteAddress: string;
  /** The connection it came over: the same for every message of one connection, another for each. */
  connection: string;
};
export type MxReply = { code: number; message: string };

/** What a receiver answers; `null` (or a missing rule) accepts. Rules are read at each step, so a test may change them at any time. */
export type MxBehaviour = {
  /**
   * Before the greeting. `'hang'`: take the connection and never say a word. `'close'`: take it and
   * close it at once, without a word. A reply (e.g. 421) is sent instead of the greeting, and the
   * connection closed.
   */
  connect?: (session: { remoteAddress: string }) => 'hang' | 'close' | MxReply | null;
  /** Per MAIL FROM: a reply refuses the transaction (a 421 also closes the connection). */
  mail?: (address: string) => MxReply | null;
  /**
   * Per RCPT TO: a reply refuses that recipient. `tries` is how many times this address was given
   * to this receiver before (0 the first time), so greylisting is one line. A 421 also closes the
   * connection (smtp-server closes after every 421 it sends).
   */
  rcpt?: (address: string, tries: number) => MxReply | null;
  /** After the final dot: a reply refuses the whole message (a 421 also closes the connection). */
  data?: (message: MxMessage) => MxReply | null;
  /** Waits this long before answering the final dot, as a slow receiver does. */
  replyDelayMs?: number;
  /** Answers the final dot only once this settles (after `replyDelayMs`): a test holds replies, and so counts the messages under way at once. */
  replyWhen?: (message: MxMessage) => Promise<unknown>;
  /**
   * Takes this command and never answers it, nor anything after it, as a server that stalls
   * mid-session: MAIL FROM, RCPT TO, DATA (no 354), or the final dot (no reply after the message,
   * which is then not among `received`).
   */
  hang?: 'MAIL' | 'RCPT' | 'DATA' | 'DOT';
};

export type MxReceiver = {
  address: string;
  /** Messages accepted. */
  received: MxMessage[];
  /** Every refusal sent by a behaviour, as `code message`. */
  refusals: string[];
  behaviour: MxBehaviour;
  /** TCP connections open now, whatever stage they are at (hung, refused and closing ones too). */
  openSessions(): number;
  /**
   * The most connections ever open at once, since the start or the last `resetPeak()`. A connection
   * counts until this side sees it close: one the sender closed just before opening the next may
   * still count when the next is accepted, so a sender at its cap that replaces a connection can
   * show here one over it.
   */
  readonly peakSessions: number;
  /** Restarts the peak from the connections open now. */
  resetPeak(): void;
  /** The EHLO/HELO name of every mail transaction (recorded at MAIL FROM), in order. */
  helos: string[];
  /** The client's source address of every connection, in order. */
  remoteAddresses: string[];
  /**
   * Stops listening: the address and port then refuse TCP connections. Sessions still open are
   * told `421 Server shutting down` and closed, as by a server going down.
   */
  stop(): Promise<void>;
  /** Listens again, on the same address and port. */
  start(): Promise<void>;
};

export type MxReceivers = {
  /** The one port every receiver listens on: the port direct delivery dials, as 25 in production. */
  port: number;
  receivers: MxReceiver[];
  byAddress(address: string): MxReceiver;
  /** Every message accepted by any receiver. */
  all(): MxMessage[];
  close(): Promise<void>;
};

type Certificate = { key: string; cert: string };
let certificate: Promise<Certificate> | undefined;

/** One self-signed certificate for every receiver of the process: nobody verifies it, as many MX hosts are not verified. */
function selfSignedCertificate(): Promise<Certificate> {
  certificate ??= import('selfsigned')
    .then(({ generate }) => generate([{ name: 'commonName', value: 'mx.test' }], { keySize: 2048, algorithm: 'sha256' }))
    .then((generated) => ({ key: generated.private, cert: generated.cert }));
  return certificate;
}

const reply = (r: MxReply) => Object.assign(new Error(r.message), { responseCode: r.code });

/**
 * Real SMTP servers, one per loopback address (every 127.x.y.z can be bound on Linux), all on one
 * port, standing in for the MX hosts of recipient domains. STARTTLS is offered unless
 * `starttls: false`.
 */
export async function startMxReceivers(addresses: string[], options: { starttls?: boolean } = {}): Promise<MxReceivers> {
  const tls = options.starttls === false ? null : await selfSignedCertificate();
  const receivers = addresses.map((address) => receiver(address, tls));
  const port = await listenOnOnePort(receivers);
  return {
    port,
    receivers: receivers.map((r) => r.api),
    byAddress(address) {
      const found = receivers.find((r) => r.api.address === address);
      if (!found) throw new Error(`No MX receiver on ${address}`);
      return found.api;
    },
    all: () => receivers.flatMap((r) => r.api.received),
    close: async () => {
      await Promise.all(receivers.map((r) => r.close()));
    },
  };
}

/**
 * The first receiver takes a port the OS picks on its address; the others bind that port on theirs,
 * where another listener may hold it (on that address, or on all of them): then all start over.
 */
async function listenOnOnePort(receivers: ReturnType<typeof receiver>[]): Promise<number> {
  for (let attempt = 1; ; attempt++) {
    const [first, ...others] = receivers;
    if (!first) throw new Error('startMxReceivers needs at least one address');
    const port = await first.listen(0);
    try {
      for (const other of others) await other.listen(port);
      return port;
    } catch (error) {
      await Promise.all(receivers.map((r) => r.close()));
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt === 10) throw error;
    }
  }
}

function receiver(address: string, tls: Certificate | null) {
  const sockets = new Set<Socket>();
  // smtp-server takes every listener off a socket it upgrades with STARTTLS, our 'close' one too:
  // a socket is counted while it is not destroyed, and forgotten once it is.
  const live = () => {
    for (const socket of sockets) if (socket.destroyed) sockets.delete(socket);
    return sockets.size;
  };
  const triesByAddress = new Map<string, number>();
  let peak = 0;
  let port = 0;
  let server: SMTPServer | null = null;

  const api: MxReceiver = {
    address,
    received: [],
    refusals: [],
    behaviour: {},
    openSessions: () => live(),
    get peakSessions() {
      return peak;
    },
    resetPeak() {
      peak = live();
    },
    helos: [],
    remoteAddresses: [],
    stop: () => stop(),
    start: async () => {
      await listen(port);
    },
  };
  const refuse = (answer: MxReply) => {
    api.refusals.push(`${answer.code} ${answer.message}`);
    return reply(answer);
  };

  const make = () => {
    const smtp: SMTPServer = new SMTPServer({
      disabledCommands: tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
      authOptional: true,
      ...(tls ?? {}),
      logger: false,
      size: 50 * 1024 * 1024,
      // The lookup of a loopback client's name can take seconds before the greeting.
      disableReverseLookup: true,
      // stop(): the 421 to open sessions goes out at once, not after smtp-server's 30 s grace.
      closeTimeout: 1,
      onConnect(session, callback) {
        const answer = api.behaviour.connect?.({ remoteAddress: session.remoteAddress }) ?? null;
        // Never called back: the connection stays open and the greeting never comes.
        if (answer === 'hang') return;
        if (answer === 'close') {
          const { remoteAddress, remotePort } = session;
          [...sockets].find((socket) => socket.remoteAddress === remoteAddress && socket.remotePort === remotePort)?.destroy();
          return;
        }
        callback(answer ? refuse(answer) : undefined);
      },
      onMailFrom(from, session, callback) {
        api.helos.push(session.hostNameAppearsAs);
        if (api.behaviour.hang === 'MAIL') return;
        const answer = api.behaviour.mail?.(from.address) ?? null;
        callback(answer ? refuse(answer) : undefined);
      },
      onRcptTo(recipient, _session, callback) {
        if (api.behaviour.hang === 'RCPT') return;
        const tries = triesByAddress.get(recipient.address) ?? 0;
        triesByAddress.set(recipient.address, tries + 1);
        const answer = api.behaviour.rcpt?.(recipient.address, tries) ?? null;
        callback(answer ? refuse(answer) : undefined);
      },
      onData(stream, session, callback) {
        if (api.behaviour.hang === 'DATA') {
          // smtp-server sends its 354 itself, right after this call: the connection drops that one.
          type Connection = { session: unknown; send(code: number, ...rest: unknown[]): void };
          const connection = [...(smtp.connections as Set<Connection>)].find((c) => c.session === session);
          if (!connection) throw new Error('hang on DATA: the session has no connection');
          const send = connection.send;
          connection.send = function (this: Connection, code, ...rest) {
            connection.send = send;
            if (code !== 354) send.call(this, code, ...rest);
          };
          return;
        }
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('end', () => {
          const message: MxMessage = {
            receiver: address,
            mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            rcptTo: session.envelope.rcptTo.map((r) => r.address),
            raw: Buffer.concat(chunks),
            at: Date.now(),
            secure: session.secure,
            helo: session.hostNameAppearsAs,
            remoteAddress: session.remoteAddress,
            connection: session.id,
          };
          if (api.behaviour.hang === 'DOT') return;
          const answer = api.behaviour.data?.(message) ?? null;
          if (!answer) api.received.push(message);
          const { replyDelayMs: delay = 0, replyWhen } = api.behaviour;
          const respond = () => {
            if (!replyWhen) return callback(answer ? refuse(answer) : undefined);
            void replyWhen(message).finally(() => callback(answer ? refuse(answer) : undefined));
          };
          if (delay > 0) setTimeout(respond, delay);
          else respond();
        });
      },
    });
    return smtp;
  };

  const listen = async (at: number) => {
    const smtp = make();
    // A client killed mid-session (kill -9) resets its connection; the receiver just drops it.
    smtp.on('error', () => {});
    // Counted at the TCP level: smtp-server calls onConnect only after a 100 ms wait, and not at all
    // for a client gone by then, yet calls onClose for it; its 'connect' event skips refused sessions.
    smtp.server.on('connection', (socket: Socket) => {
      sockets.add(socket);
      peak = Math.max(peak, live());
      api.remoteAddresses.push(socket.remoteAddress ?? '');
      socket.once('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      smtp.server.once('error', reject);
      smtp.listen(at, address, () => {
        smtp.server.off('error', reject);
        resolve();
      });
    });
    server = smtp;
    port = (smtp.server.address() as AddressInfo).port;
    return port;
  };

  const stop = async () => {
    const smtp = server;
    server = null;
    if (smtp) await new Promise<void>((resolve) => smtp.close(() => resolve()));
  };

  return {
    api,
    listen,
    /** Stops, and cuts whatever is still connected: the test is over, nobody waits for replies. */
    close: async () => {
      // Cut first: smtp-server's close waits for every session to end.
      const open = [...sockets].filter((socket) => !socket.destroyed);
      const closing = open.map((socket) => new Promise((resolve) => socket.once('close', resolve)));
      for (const socket of open) socket.destroy();
      await Promise.all([stop(), ...closing]);
    },
  };
}
