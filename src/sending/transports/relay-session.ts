import net from 'node:net';
import tls from 'node:tls';
import type { RelayOptions } from './relay-url.js';

/** One reply of the relay: its code and its lines as sent, joined by newlines. */
export type Reply = { code: number; text: string };

/** The session is gone or never came up (connection, timeout, TLS, greeting, login); nothing more goes over it. */
export class SessionFailure extends Error {
  constructor(message: string, readonly code: number | null = null) {
    super(message);
  }
}

type Waiter = { resolve(reply: Reply): void; reject(error: SessionFailure): void };

/**
 * How long each step may take: connecting, the greeting and each command's reply (EHLO, STARTTLS,
 * MAIL, RCPT), the reply to DATA, and the reply after the final dot. A relay gives one timeout to
 * all; RFC 5321 §4.5.3.2 gives an MX 5 minutes for most, 2 for DATA and 10 after the dot.
 */
export type SessionTimeouts = { connect: number; reply: number; dataStart: number; dataEnd: number };

export const sameTimeouts = (ms: number): SessionTimeouts => ({ connect: ms, reply: ms, dataStart: ms, dataEnd: ms });

const CRLF = Buffer.from('\r\n');
const END_OF_DATA = Buffer.from('.\r\n');
const NON_ASCII = /[^\x00-\x7f]/;
const MAX_REPLY_CHARS = 64 * 1024;
const QUIT_TIMEOUT_MS = 5_000;

/** A 2xx or 3xx: the relay took the command. */
export const positive = (reply: Reply) => reply.code >= 200 && reply.code < 400;

/**
 * The message as DATA carries it (RFC 5321 §4.5.2): every line ending CRLF, a leading dot doubled,
 * then the terminating dot line. A message that needs no change, as built ones do not, is sent
 * as it is, without a copy.
 */
export function dataBlock(message: Buffer): Buffer[] {
  let clean = message.length === 0 || message[0] !== 0x2e;
  for (let at = message.indexOf(0x0a); clean && at !== -1; at = message.indexOf(0x0a, at + 1)) {
    if (message[at - 1] !== 0x0d || message[at + 1] === 0x2e) clean = false;
  }
  const endsWithLine = message.length >= 2 && message[message.length - 2] === 0x0d && message[message.length - 1] === 0x0a;
  if (clean) return endsWithLine || message.length === 0 ? [message, END_OF_DATA] : [message, CRLF, END_OF_DATA];
  const lines = message.toString('latin1').split(/\r?\n/);
  if (lines[lines.length - 1] === '') lines.pop();
  const text = lines.map((line) => (line.startsWith('.') ? `.${line}` : line)).join('\r\n');
  return [Buffer.from(`${text}\r\n`, 'latin1'), END_OF_DATA];
}

/**
 * One SMTP session with the relay (RFC 5321): greeting, EHLO, STARTTLS and AUTH as the relay
 * offers and SMTP_URL asks, then commands whose replies come back in the order sent, so that with
 * PIPELINING (RFC 2920) a whole envelope, and the next message's envelope after a message's
 * final dot, go out in one write.
 */
export class RelaySession {
  private socket!: net.Socket;
  private readonly waiters: Waiter[] = [];
  private buffered = '';
  private lines: string[] = [];
  private failure: SessionFailure | null = null;
  private extensions = new Set<string>();
  private authMechanisms = new Set<string>();
  private readonly closeCallbacks = new Set<() => void>();
  private replyTimeout = 0;
  // A 421 read: the server is closing the connection (RFC 5321 §3.8), and its end is that reply's doing.
  private closing: Reply | null = null;

  private constructor(private readonly options: RelayOptions, readonly timeouts: SessionTimeouts) {}

  /** A session ready for mail: connected, greeted, encrypted and logged in as the options ask. */
  static async open(options: RelayOptions, timeouts: SessionTimeouts): Promise<RelaySession> {
    const session = new RelaySession(options, timeouts);
    try {
      await session.connect();
      await session.handshake();
      return session;
    } catch (error) {
      session.destroy();
      throw error instanceof SessionFailure ? error : new SessionFailure((error as Error).message);
    }
  }

  get pipelining(): boolean {
    return this.extensions.has('PIPELINING');
  }

  get closed(): boolean {
    return this.failure !== null;
  }

  /** Whether the session runs over TLS (from the first byte, or since STARTTLS). */
  get encrypted(): boolean {
    return this.socket instanceof tls.TLSSocket;
  }

  /** Calls back once, when the session ends for any reason; answers how to stop listening. */
  onClose(callback: () => void): () => void {
    this.closeCallbacks.add(callback);
    return () => this.closeCallbacks.delete(callback);
  }

  /** The commands of an envelope, each with its line ending: MAIL FROM, one RCPT TO a recipient, DATA. */
  envelopeCommands(envelope: { from: string; to: string[] }): string[] {
    const utf8 = this.extensions.has('SMTPUTF8') && [envelope.from, ...envelope.to].some((address) => NON_ASCII.test(address));
    return [
      `MAIL FROM:<${envelope.from}>${utf8 ? ' SMTPUTF8' : ''}\r\n`,
      ...envelope.to.map((address) => `RCPT TO:<${address}>\r\n`),
      'DATA\r\n',
    ];
  }

  /**
   * Writes in one go (one system call, one segment when it fits) and answers the replies owed, in
   * order, each within `timeoutMs` of the one before.
   */
  send(chunks: Array<string | Buffer>, replies: number, timeoutMs = this.timeouts.reply): Promise<Reply>[] {
    const answers = Array.from({ length: replies }, () => this.nextReply(timeoutMs));
    if (this.failure) return answers;
    this.socket.cork();
    for (const chunk of chunks) this.socket.write(chunk);
    this.socket.uncork();
    return answers;
  }

  /**
   * The envelope's replies: all at once with PIPELINING, else one command at a time, stopping where
   * the server refuses (MAIL FROM refused, or no recipient taken before DATA).
   */
  async sendEnvelope(commands: string[]): Promise<Reply[]> {
    if (this.pipelining) return Promise.all(this.send(commands, commands.length));
    const replies: Reply[] = [];
    for (const [i, command] of commands.entries()) {
      const isData = i === commands.length - 1;
      if (isData && !replies.slice(1).some(positive)) break;
      const reply = await this.send([command], 1, isData ? this.timeouts.dataStart : this.timeouts.reply)[0]!;
      replies.push(reply);
      if (i === 0 && !positive(reply)) break;
    }
    return replies;
  }

  /** One command, its reply. */
  command(line: string): Promise<Reply> {
    return this.send([`${line}\r\n`], 1)[0]!;
  }

  /** Says goodbye and closes; never fails. */
  /**
   * Says goodbye and closes, once the server has closed its side (or a few seconds have passed):
   * a connection that counts against a server's limit is gone from its side before we open the
   * next. Never fails.
   */
  async quit(): Promise<void> {
    if (this.failure) return;
    const limit = Math.min(this.timeouts.reply, QUIT_TIMEOUT_MS);
    const closed = new Promise<void>((resolve) => {
      this.onClose(resolve);
      setTimeout(resolve, limit).unref();
    });
    // A server slow to say goodbye is not waited for as long as for a reply that matters.
    const bye = await this.send(['QUIT\r\n'], 1, limit)[0]!.catch(() => null);
    if (bye) await closed;
    this.destroy();
  }

  destroy(failure = new SessionFailure('the session was closed')): void {
    this.fail(failure);
    this.socket?.destroy();
  }

  private nextReply(timeoutMs = this.timeouts.reply): Promise<Reply> {
    return new Promise<Reply>((resolve, reject) => {
      if (this.failure) return reject(this.failure);
      this.waiters.push({ resolve, reject });
      // The clock runs only while a reply is owed, with the longest wait owed: an idle session is
      // the pool's to time out.
      this.replyTimeout = this.waiters.length === 1 ? timeoutMs : Math.max(this.replyTimeout, timeoutMs);
      this.socket.setTimeout(this.replyTimeout);
    });
  }

  private fail(failure: SessionFailure): void {
    if (this.failure) return;
    this.failure = failure;
    for (const waiter of this.waiters.splice(0)) waiter.reject(failure);
    for (const callback of this.closeCallbacks) callback();
    this.closeCallbacks.clear();
  }

  private connect(): Promise<void> {
    const { host, port, secure, localAddress } = this.options;
    return new Promise<void>((resolve, reject) => {
      // tls.connect hands localAddress on to its TCP connection, though its types leave it out.
      const socket = secure ? tls.connect({ host, port, localAddress, ...this.tlsOptions() } as tls.ConnectionOptions) : net.connect({ host, port, localAddress });
      this.attach(socket);
      const timer = setTimeout(
        () => reject(new SessionFailure(`connection timeout: ${host}:${port} did not answer within ${this.timeouts.connect} ms`)),
        this.timeouts.connect,
      );
      socket.once(secure ? 'secureConnect' : 'connect', () => {
        clearTimeout(timer);
        resolve();
      });
      socket.once('error', (error) => {
        clearTimeout(timer);
        reject(new SessionFailure(`cannot reach ${host}:${port}: ${error.message}`));
      });
    });
  }

  private tlsOptions(): tls.ConnectionOptions {
    return { servername: this.options.servername, rejectUnauthorized: this.options.rejectUnauthorized };
  }

  private attach(socket: net.Socket): void {
    this.socket = socket;
    // Each command is written once, whole: nothing is gained by Nagle's algorithm, whose wait for
    // the receiver's delayed ACK would hold the last small write of every message.
    socket.setNoDelay(true);
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => this.read(chunk));
    socket.on('timeout', () => this.destroy(new SessionFailure(`timeout: no answer within ${this.replyTimeout} ms`)));
    socket.on('error', (error) => this.fail(this.closedWith421() ?? new SessionFailure(`connection to the relay failed: ${error.message}`)));
    socket.on('close', () => this.fail(this.closedWith421() ?? new SessionFailure('the relay closed the connection')));
  }

  /**
   * A server that answers 421 and closes, as to one command of a pipelined envelope: the replies
   * still owed fail with its 421, so that what the server said (often: slow down) is not lost.
   */
  private closedWith421(): SessionFailure | null {
    return this.closing && new SessionFailure(this.closing.text, this.closing.code);
  }

  private read(chunk: string): void {
    this.buffered += chunk;
    // A relay that talks without end (no line ending, or a reply of endless lines) is cut off
    // rather than held in memory.
    if (this.buffered.length + this.lines.length * 80 > MAX_REPLY_CHARS) {
      return this.destroy(new SessionFailure(`the relay sent a reply longer than ${MAX_REPLY_CHARS} characters`));
    }
    for (let end = this.buffered.indexOf('\n'); end !== -1; end = this.buffered.indexOf('\n')) {
      const line = this.buffered.slice(0, end).replace(/\r$/, '');
      this.buffered = this.buffered.slice(end + 1);
      this.lines.push(line);
      if (line.charAt(3) === '-') continue;
      const reply = { code: Number(line.slice(0, 3)) || 0, text: this.lines.join('\n') };
      this.lines = [];
      if (reply.code === 421) this.closing = reply;
      const waiter = this.waiters.shift();
      if (this.waiters.length === 0) this.socket.setTimeout(0);
      // A reply nobody asked for is the relay ending the session (421 on its idle timeout).
      if (!waiter) return this.destroy(new SessionFailure(`the relay ended the session: ${reply.text}`, reply.code));
      waiter.resolve(reply);
    }
  }

  private async expect(reply: Promise<Reply>, what: string): Promise<Reply> {
    const answer = await reply;
    if (!positive(answer)) throw new SessionFailure(`${what} refused: ${answer.text}`, answer.code);
    return answer;
  }

  private async handshake(): Promise<void> {
    const greeting = await this.nextReply().catch((error: SessionFailure) => {
      throw new SessionFailure(`greeting never came: ${error.message}`);
    });
    if (greeting.code !== 220) throw new SessionFailure(`the relay refused the connection: ${greeting.text}`, greeting.code);
    await this.hello();
    const encrypted = this.options.secure;
    if (!encrypted && !this.options.ignoreTLS && this.extensions.has('STARTTLS')) {
      await this.expect(this.command('STARTTLS'), 'STARTTLS');
      await this.upgrade();
      await this.hello();
    } else if (!encrypted && this.options.requireTLS) {
      throw new SessionFailure('SMTP_URL requires TLS, but the relay does not offer STARTTLS');
    }
    if (this.options.auth) await this.login(this.options.auth);
  }

  private async hello(): Promise<void> {
    const ehlo = await this.command(`EHLO ${this.options.clientName}`);
    if (!positive(ehlo)) {
      await this.expect(this.command(`HELO ${this.options.clientName}`), 'HELO');
      this.extensions = new Set();
      return;
    }
    const lines = ehlo.text.split('\n').slice(1).map((line) => line.slice(4).trim().toUpperCase());
    this.extensions = new Set(lines.map((line) => line.split(/[\s=]/)[0]!));
    this.authMechanisms = new Set(lines.filter((line) => /^AUTH[\s=]/.test(line)).flatMap((line) => line.slice(5).split(/\s+/)));
  }

  private upgrade(): Promise<void> {
    const plain = this.socket;
    plain.removeAllListeners('data');
    plain.removeAllListeners('timeout');
    plain.removeAllListeners('close');
    plain.removeAllListeners('error');
    return new Promise<void>((resolve, reject) => {
      const secured = tls.connect({ socket: plain, ...this.tlsOptions() });
      this.attach(secured);
      secured.setTimeout(this.timeouts.reply);
      secured.once('secureConnect', () => {
        secured.setTimeout(0);
        resolve();
      });
      secured.once('error', (error) => reject(new SessionFailure(`TLS with the relay failed: ${error.message}`)));
      secured.once('close', () => reject(new SessionFailure('the relay closed the connection during TLS')));
    });
  }

  private async login({ user, pass }: { user: string; pass: string }): Promise<void> {
    const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
    if (this.authMechanisms.has('PLAIN')) {
      await this.expect(this.command(`AUTH PLAIN ${base64(`\0${user}\0${pass}`)}`), 'AUTH PLAIN');
    } else if (this.authMechanisms.has('LOGIN')) {
      await this.expect(this.command('AUTH LOGIN'), 'AUTH LOGIN');
      await this.expect(this.command(base64(user)), 'AUTH LOGIN');
      await this.expect(this.command(base64(pass)), 'AUTH LOGIN');
    } else {
      throw new SessionFailure('SMTP_URL has credentials, but the relay offers neither AUTH PLAIN nor AUTH LOGIN');
    }
  }
}
