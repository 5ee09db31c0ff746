import type { SMTPServer, SMTPServerSession } from 'smtp-server';
import { clientKeys, type ClientKeys } from './client-keys.js';

const refusal = (message: string) => Object.assign(new Error(message), { responseCode: 421 });

// The slowest pace a message may come at (64 KiB/s): one at the size limit may take that long.
const SLOWEST_DATA_BYTES_PER_MS = (64 * 1024) / 1000;
// A command deadline as long as the session's would bound nothing of its own.
const MAX_COMMAND_SHARE_OF_SESSION = 0.2;

/** What this module needs of smtp-server's connection object, which its public types leave out. */
type Connection = {
  id: string;
  _onCommand(command: Buffer, callback?: () => void): void;
  send(code: number, message: string | string[], context?: string | false): void;
  _closing: boolean;
  _closed: boolean;
  _handlerPending: boolean;
  _dataStream: object | false | null;
  _parser: { _dataMode: boolean } | false;
};

export type Limits = {
  /** Sessions at once from one client (an IPv4 address, an IPv6 /64); 421 beyond. */
  perClient: number;
  /** Sessions at once from one network (an IPv4 /24, an IPv6 /64); 421 beyond. */
  perNetwork: number;
  /** Commands in one session, after which it is answered 421 and closed. */
  commandsPerSession: number;
  /** How long the client may take to send a command line, from our reply to the one before. */
  commandMs: number;
  /** How long one session may last, whatever the client sends. */
  sessionMs: number;
  /** The message size limit: the time allowed for sending a message grows with it. */
  maxMessageBytes: number;
};

/**
 * What keeps a few clients from holding a listener that is open to the internet: places per client
 * and per network, a command count per session, and deadlines (RFC 5321 §4.5.3.2) that only a
 * complete reply-and-answer step extends, so trickling a byte now and then keeps nothing alive:
 * a command line must be in within the command deadline of our previous reply, a message within
 * the data deadline of our 354, and no session outlives the session deadline. A deadline that
 * passes while the client waits for us (a handler or onData still deciding) is kept until our
 * reply is out, so a client is never told to retry what we may still be accepting. A passed
 * deadline is answered `421 4.4.2` and closes the session.
 */
export class ClientLimits {
  private readonly clients = new Map<string, number>();
  private readonly networks = new Map<string, number>();
  private readonly places = new Map<string, ClientKeys & { stop(): void }>();
  private readonly commandMs: number;
  private readonly dataMs: number;

  constructor(private readonly limits: Limits) {
    this.commandMs = Math.min(limits.commandMs, limits.sessionMs * MAX_COMMAND_SHARE_OF_SESSION);
    this.dataMs = Math.min(Math.max(limits.maxMessageBytes / SLOWEST_DATA_BYTES_PER_MS, this.commandMs), limits.sessionMs);
  }

  /** smtp-server's onConnect: admits the session, or refuses it when its address or network has too many open. */
  admit(server: SMTPServer, session: SMTPServerSession, callback: (error?: Error) => void): void {
    const keys = clientKeys(session.remoteAddress);
    if ((this.clients.get(keys.client) ?? 0) >= this.limits.perClient) {
      return callback(refusal('4.7.0 Too many connections from your address; try again later'));
    }
    if ((this.networks.get(keys.network) ?? 0) >= this.limits.perNetwork) {
      return callback(refusal('4.7.0 Too many connections from your network; try again later'));
    }
    const connection = [...server.connections].find((c: Connection) => c.id === session.id) as Connection | undefined;
    // Gone while its address was being looked up: there is nothing to hold a place for.
    if (!connection) return callback();
    count(this.clients, keys.client, 1);
    count(this.networks, keys.network, 1);
    this.places.set(session.id, { ...keys, stop: this.guard(connection) });
    callback();
  }

  /** smtp-server's onClose: frees the session's place (a refused session never had one). */
  release(session: SMTPServerSession): void {
    const place = this.places.get(session.id);
    if (!place) return;
    this.places.delete(session.id);
    place.stop();
    count(this.clients, place.client, -1);
    count(this.networks, place.network, -1);
  }

  /** Counts the session's commands and keeps its deadlines; answers how to stop the clocks. */
  private guard(connection: Connection): () => void {
    const closing = (reason: string) => connection.send(421, `4.4.2 ${reason} timeout; closing`, false);
    // The client waits for us: a handler has not answered, or the message is in and onData is deciding.
    const owed = () => connection._handlerPending || (Boolean(connection._dataStream) && connection._parser !== false && !connection._parser._dataMode);

    let expired = false;
    let step: NodeJS.Timeout | undefined;
    const session = setTimeout(() => {
      expired = true;
      if (!owed()) closing('Session');
    }, this.limits.sessionMs).unref();

    const send = connection.send.bind(connection);
    connection.send = (code, message, context) => {
      send(code, message, context);
      clearTimeout(step);
      if (connection._closing || connection._closed) return;
      if (expired) return closing('Session');
      const data = code === 354;
      step = setTimeout(() => {
        if (!owed()) closing(data ? 'Message' : 'Command');
      }, data ? this.dataMs : this.commandMs).unref();
    };

    const handle = connection._onCommand.bind(connection);
    let commands = 0;
    connection._onCommand = (command, callback) => {
      if (++commands <= this.limits.commandsPerSession) return handle(command, callback);
      connection.send(421, '4.7.0 Too many commands in one session; closing', false);
    };

    return () => {
      clearTimeout(session);
      clearTimeout(step);
    };
  }
}

function count(open: Map<string, number>, key: string, change: 1 | -1): void {
  const now = (open.get(key) ?? 0) + change;
  if (now > 0) open.set(key, now);
  else open.delete(key);
}
