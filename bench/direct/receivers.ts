/**
 * The direct delivery benchmark's outside world, in a process of its own as the real one would be:
 * a DNS server on loopback and one SMTP receiver per destination on 127.0.0.2, 127.0.0.3, …, all
 * on one port (the port direct delivery dials, as 25 in production). Recipient domain dJ.test has
 * one MX, mx.pK-mail.test with K = J mod the number of destinations, whose A record is receiver K:
 * every destination (the registrable domain pK-mail.test) hosts the same number of domains.
 *
 *   tsx bench/direct/receivers.ts <domains> <destinations>
 *
 * The receivers are the relay benchmark's sink, several times over: smtp-server with AUTH and
 * STARTTLS off, accepting everything and keeping nothing. Each counts its messages, the recipients
 * of a domain it does not host (misrouted), and at their peak the TCP connections open at once and
 * the sessions in use at once (from EHLO to QUIT).
 * Prints `receivers <port>` once listening; then for each line on stdin: `dns` → `dns <ip:port>`
 * (for DNS_SERVERS), `stats` → `stats <JSON array, one entry per receiver>`, anything else →
 * `count <messages received by all>`. Its stdin ending stops it.
 */
import type { AddressInfo, Socket } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { startDnsServer } from '../../test/helpers/dns-server.js';

const domainCount = Number(process.argv[2] ?? 50);
const destinationCount = Number(process.argv[3] ?? 5);
// An hour: every route stays cached for the whole run, as a provider's MX records would.
const TTL = 3_600;

export type ReceiverStats = {
  address: string;
  host: string;
  destination: string;
  domains: number;
  received: number;
  /** Recipients of a domain this receiver does not host. */
  misrouted: number;
  /** The most TCP connections open at once. */
  peakSessions: number;
  /**
   * The most sessions in use at once: from the sender's first command (EHLO, after the greeting)
   * to its QUIT, after which a connection is only closing.
   */
  peakInUse: number;
};

function receiver(index: number) {
  const destination = `p${index}-mail.test`;
  const hosted = new Set<string>();
  for (let j = index; j < domainCount; j += destinationCount) hosted.add(`d${j}.test`);
  const stats: ReceiverStats = {
    address: `127.0.0.${2 + index}`, host: `mx.${destination}`, destination, domains: hosted.size, received: 0, misrouted: 0, peakSessions: 0, peakInUse: 0,
  };
  const open = new Set<Socket>();
  const inUse = new Set<Socket>();
  const server = new SMTPServer({
    disabledCommands: ['AUTH', 'STARTTLS'],
    authOptional: true,
    logger: false,
    // A reverse lookup of 127.0.0.x per connection would delay each greeting: not the sender's cost.
    disableReverseLookup: true,
    onRcptTo(address, _session, callback) {
      if (!hosted.has(address.address.slice(address.address.lastIndexOf('@') + 1).toLowerCase())) stats.misrouted++;
      callback();
    },
    onData(stream, _session, callback) {
      stream.on('data', () => {});
      stream.on('end', () => {
        stats.received++;
        callback();
      });
    },
  });
  server.on('error', () => {});
  // Counted at the TCP level, from accept to close: a session the sender has quit still counts
  // until its socket is gone.
  server.server.on('connection', (socket: Socket) => {
    open.add(socket);
    stats.peakSessions = Math.max(stats.peakSessions, open.size);
    // Not from the accept: a sender that quits one connection and opens the next may have its new
    // connection accepted here before its QUIT on the old one is read, but never its EHLO. The
    // sender's QUIT comes alone, after the reply to its last message.
    const onData = (chunk: Buffer) => {
      if (!inUse.has(socket)) {
        inUse.add(socket);
        stats.peakInUse = Math.max(stats.peakInUse, inUse.size);
      }
      if (chunk.includes('QUIT\r\n')) forget();
    };
    const forget = () => {
      inUse.delete(socket);
      socket.off('data', onData);
    };
    socket.on('data', onData);
    socket.once('close', () => {
      open.delete(socket);
      forget();
    });
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.server.once('error', reject);
      server.listen(port, stats.address, () => {
        server.server.off('error', reject);
        resolve((server.server.address() as AddressInfo).port);
      });
    });
  const close = () => new Promise<void>((resolve) => {
    for (const socket of open) socket.destroy();
    server.close(() => resolve());
  });
  return { stats, listen, close };
}

/** The first receiver takes a free port on its address; the others bind the same port on theirs, or all start over. */
async function listenOnOnePort(make: () => ReturnType<typeof receiver>[]) {
  for (let attempt = 1; ; attempt++) {
    const receivers = make();
    const port = await receivers[0]!.listen(0);
    try {
      for (const other of receivers.slice(1)) await other.listen(port);
      return { receivers, port };
    } catch (error) {
      await Promise.all(receivers.map((r) => r.close()));
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt === 10) throw error;
    }
  }
}

const dns = await startDnsServer();
const { receivers, port } = await listenOnOnePort(() => Array.from({ length: destinationCount }, (_, index) => receiver(index)));
for (const { stats } of receivers) dns.set(stats.host, [{ type: 'A', address: stats.address, ttl: TTL }]);
for (let j = 0; j < domainCount; j++) {
  dns.set(`d${j}.test`, [{ type: 'MX', exchange: receivers[j % destinationCount]!.stats.host, priority: 10, ttl: TTL }]);
}

process.stdout.write(`receivers ${port}\n`);
let buffer = '';
process.stdin.setEncoding('utf8').on('data', (chunk: string) => {
  buffer += chunk;
  for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
    const line = buffer.slice(0, i).trim();
    buffer = buffer.slice(i + 1);
    if (line === 'dns') process.stdout.write(`dns ${dns.address}\n`);
    else if (line === 'stats') process.stdout.write(`stats ${JSON.stringify(receivers.map((r) => r.stats))}\n`);
    else process.stdout.write(`count ${receivers.reduce((sum, r) => sum + r.stats.received, 0)}\n`);
  }
});
process.stdin.on('end', async () => {
  await Promise.all([...receivers.map((r) => r.close()), dns.close()]);
  process.exit(0);
});
