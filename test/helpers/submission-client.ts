import net from 'node:net';
import tls from 'node:tls';

/** One SMTP reply: its code and the text of every line (without the code). */
export type Reply = { code: number; lines: string[]; text: string };

/**
 * A raw SMTP client over a real socket, one command at a time, for what a library client would
 * not send or would hide: commands out of order, garbage, a message cut off in the middle. With
 * `tls` it speaks TLS from the first byte (implicit TLS); `startTls()` upgrades a plain one.
 * Certificates are not checked (the listener's is self-signed).
 */
export class SubmissionClient {
  private socket: net.Socket;
  private buffer = '';
  private lines: string[] = [];
  private waiting: { resolve: (reply: Reply) => void; reject: (error: Error) => void } | null = null;
  private ended = false;
  /** The greeting the server opened with. */
  greeting!: Reply;
  /** Settles once the connection is closed, by either side. */
  readonly closed: Promise<void>;
  private markClosed!: () => void;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    this.closed = new Promise((resolve) => (this.markClosed = resolve));
    this.attach(socket);
  }

  static async connect(port: number, options: { tls?: boolean; localAddress?: string } = {}): Promise<SubmissionClient> {
    const plain = net.connect({ host: '127.0.0.1', port, localAddress: options.localAddress });
    const socket = options.tls ? tls.connect({ socket: plain, rejectUnauthorized: false }) : plain;
    const client = new SubmissionClient(socket);
    client.greeting = await client.read();
    return client;
  }

  private attach(socket: net.Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.buffer += chunk;
      let end: number;
      while ((end = this.buffer.indexOf('\r\n')) !== -1) {
        this.lines.push(this.buffer.slice(0, end));
        this.buffer = this.buffer.slice(end + 2);
      }
      this.deliver();
    });
    socket.on('error', () => {
      // A reset shows as the connection closing; the reply awaited then fails.
    });
    socket.on('close', () => {
      this.ended = true;
      this.markClosed();
      this.deliver();
    });
  }

  /** Hands the awaited reply over once its last line (`NNN text`, not `NNN-text`) is in. */
  private deliver() {
    if (!this.waiting) return;
    const last = this.lines.findIndex((line) => /^\d{3}(?: |$)/.test(line));
    if (last !== -1) {
      const taken = this.lines.splice(0, last + 1);
      const { resolve } = this.waiting;
      this.waiting = null;
      resolve({ code: Number(taken[last]!.slice(0, 3)), lines: taken.map((line) => line.slice(4)), text: taken.map((line) => line.slice(4)).join('\n') });
    } else if (this.ended) {
      const { reject } = this.waiting;
      this.waiting = null;
      reject(new Error(`connection closed before a reply${this.lines.length ? ` (partial: ${this.lines.join(' | ')})` : ''}`));
    }
  }

  /** The next reply. */
  read(): Promise<Reply> {
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
      this.deliver();
    });
  }

  write(data: string | Buffer): void {
    this.socket.write(data);
  }

  /** Sends one command line and answers the server's reply. */
  command(line: string): Promise<Reply> {
    const reply = this.read();
    this.write(`${line}\r\n`);
    return reply;
  }

  /** STARTTLS, then the same connection as TLS; answers the reply to STARTTLS. */
  async startTls(): Promise<Reply> {
    const reply = await this.command('STARTTLS');
    if (reply.code !== 220) return reply;
    const plain = this.socket;
    plain.removeAllListeners('data');
    plain.removeAllListeners('close');
    const secure = tls.connect({ socket: plain, rejectUnauthorized: false });
    await new Promise<void>((resolve, reject) => {
      secure.once('secureConnect', resolve);
      secure.once('error', reject);
    });
    this.socket = secure;
    this.attach(secure);
    return reply;
  }

  /** EHLO, then STARTTLS and EHLO again when the connection is not TLS yet; answers the last EHLO. */
  async secureHello(): Promise<Reply> {
    const first = await this.command('EHLO client.test');
    if (this.socket instanceof tls.TLSSocket) return first;
    const started = await this.startTls();
    if (started.code !== 220) throw new Error(`STARTTLS refused: ${started.code} ${started.text}`);
    return this.command('EHLO client.test');
  }

  authPlain(password: string, user = 'usesend'): Promise<Reply> {
    return this.command(`AUTH PLAIN ${Buffer.from(`\0${user}\0${password}`).toString('base64')}`);
  }

  async authLogin(password: string, user = 'usesend'): Promise<Reply> {
    const start = await this.command('AUTH LOGIN');
    if (start.code !== 334) return start;
    const asked = await this.command(Buffer.from(user).toString('base64'));
    if (asked.code !== 334) return asked;
    return this.command(Buffer.from(password).toString('base64'));
  }

  /**
   * MAIL, RCPT for each recipient, DATA and the message (dot-stuffed, CRLF line ends); answers
   * the first refusal, or the reply to the end of the data.
   */
  async send(from: string, to: string[], message: string): Promise<Reply> {
    const mail = await this.command(`MAIL FROM:<${from}>`);
    if (mail.code !== 250) return mail;
    for (const address of to) {
      const rcpt = await this.command(`RCPT TO:<${address}>`);
      if (rcpt.code !== 250) return rcpt;
    }
    const data = await this.command('DATA');
    if (data.code !== 354) return data;
    const body = message.replace(/\r?\n/g, '\r\n').replace(/^\./gm, '..');
    return this.command(`${body.endsWith('\r\n') ? body : `${body}\r\n`}.`);
  }

  async quit(): Promise<void> {
    if (!this.ended) {
      this.write('QUIT\r\n');
      this.socket.end();
    }
    await this.closed;
  }

  /** Drops the connection at once, as a client that crashed. */
  destroy(): void {
    this.socket.destroy();
  }
}

/** The email id the 250 reply to DATA names (`250 2.0.0 Queued as <id>`). */
export function queuedId(reply: Reply): string {
  const id = /Queued as (\S+)/.exec(reply.text)?.[1];
  if (reply.code !== 250 || !id) throw new Error(`not queued: ${reply.code} ${reply.text}`);
  return id;
}

/** A small hand-written message. */
export function plainMessage(fields: { from: string; to?: string; subject?: string; extra?: string[]; body?: string }): string {
  return [
    `From: ${fields.from}`,
    ...(fields.to ? [`To: ${fields.to}`] : []),
    `Subject: ${fields.subject ?? 'Hello'}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    ...(fields.extra ?? []),
    '',
    fields.body ?? 'Hello from a hand-written message.',
    '',
  ].join('\r\n');
}
