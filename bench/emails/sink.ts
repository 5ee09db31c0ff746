/**
 * The benchmark's receiving SMTP server, in its own process as a real relay would be: accepts
 * everything, counts messages, and prints `port N` once listening and `count N` when asked on stdin.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

let received = 0;
const server = new SMTPServer({
  disabledCommands: ['AUTH', 'STARTTLS'],
  authOptional: true,
  logger: false,
  onData(stream, _session, callback) {
    stream.on('data', () => {});
    stream.on('end', () => {
      received++;
      callback();
    });
  },
});
server.on('error', () => {});
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`port ${(server.server.address() as AddressInfo).port}\n`);
});
process.stdin.setEncoding('utf8').on('data', () => process.stdout.write(`count ${received}\n`));
process.stdin.on('end', () => server.close(() => process.exit(0)));
