/**
 * The benchmark's webhook receiver, in its own process as a real one would be: node:http on
 * loopback with kept-alive connections, answering 200 at once to every request. It verifies
 * nothing (checking signatures would be the receiver's cost, not Mailroom's); it counts requests
 * and distinct `webhook-id` header values (the call id, the same on every attempt), and notes when
 * the latest new id arrived. Prints `port N` once listening and, for each line on stdin,
 * `counts {"requests":…,"distinct":…,"lastNewAtMs":…}` (lastNewAtMs: Date.now() of the latest new id).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

let requests = 0;
let lastNewAtMs = 0;
const seen = new Set<string>();

const server = http.createServer((req, res) => {
  requests++;
  const id = req.headers['webhook-id'];
  if (typeof id === 'string' && !seen.has(id)) {
    seen.add(id);
    lastNewAtMs = Date.now();
  }
  // The body is not read, only drained so the connection can take the next request.
  req.resume();
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '2' }).end('ok');
});
// Longer than the sender keeps an idle connection (30 s), so it is the sender that closes one and
// never posts onto a connection this side is closing.
server.keepAliveTimeout = 60_000;
server.headersTimeout = 65_000;
server.on('clientError', (_error, socket) => socket.destroy());
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`port ${(server.address() as AddressInfo).port}\n`);
});
process.stdin.setEncoding('utf8').on('data', (chunk: string) => {
  for (let i = 0; i < chunk.split('\n').length - 1; i++) {
    process.stdout.write(`counts ${JSON.stringify({ requests, distinct: seen.size, lastNewAtMs })}\n`);
  }
});
process.stdin.on('end', () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
});
