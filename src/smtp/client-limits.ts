import type { SMTPServer, SMTPServerSession } from 'smtp-server';

const refusal = (message: string) => Object.assign(new Error(message), { responseCode: 421 });

/** What this module needs of smtp-server's connection object, which its public types leave out. */
type Connection = {
  id: string;
  _onCommand(command: Buffer, callback: () => void): void;
  send(code: number, message: string): void;
  close(): void;
};

/**
 * What keeps one client from holding a listener that is open to the internet: at most `perClient`
 * sessions at once from one address (421 beyond that), and at most `commandsPerSession` commands
 * in one session, after which it is answered 421 and closed, so a loop of NOOPs cannot keep a
 * slot forever. The idle timeout still ends a session that says nothing.
 */
export class ClientLimits {
  private readonly open = new Map<string, number>();
  private readonly admitted = new Set<string>();

  constructor(private readonly limits: { perClient: number; commandsPerSession: number }) {}

  /** smtp-server's onConnect: admits the session, or refuses it when its address has too many open. */
  admit(server: SMTPServer, session: SMTPServerSession, callback: (error?: Error) => void): void {
    const count = this.open.get(session.remoteAddress) ?? 0;
    if (count >= this.limits.perClient) return callback(refusal('4.7.0 Too many connections from your address; try again later'));
    this.open.set(session.remoteAddress, count + 1);
    this.admitted.add(session.id);
    this.countCommands(server, session.id);
    callback();
  }

  /** smtp-server's onClose: frees the session's place (a refused session never had one). */
  release(session: SMTPServerSession): void {
    if (!this.admitted.delete(session.id)) return;
    const left = (this.open.get(session.remoteAddress) ?? 1) - 1;
    if (left > 0) this.open.set(session.remoteAddress, left);
    else this.open.delete(session.remoteAddress);
  }

  private countCommands(server: SMTPServer, sessionId: string): void {
    const connection = [...server.connections].find((c: Connection) => c.id === sessionId) as Connection | undefined;
    if (!connection) return;
    const handle = connection._onCommand.bind(connection);
    let commands = 0;
    connection._onCommand = (command, callback) => {
      if (++commands <= this.limits.commandsPerSession) return handle(command, callback);
      connection.send(421, '4.7.0 Too many commands in one session; closing');
      connection.close();
    };
  }
}
