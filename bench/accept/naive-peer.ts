/**
 * The naive peer of the accept benchmark: what the simplest service that stores mail could do on
 * the same database. node:http, a pg pool of 10, one `INSERT … RETURNING` per request, no key
 * check, no validation beyond JSON, no transaction. Prints `peer <port>` once listening; its
 * stdin ending stops it.
 *
 *   npx tsx bench/accept/naive-peer.ts postgres://…/db
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.argv[2], max: 10 });
await pool.query(`CREATE TABLE IF NOT EXISTS peer_emails (
  id bigserial PRIMARY KEY, from_address text NOT NULL, to_address text NOT NULL, subject text NOT NULL,
  html text, scheduled_at timestamptz, created_at timestamptz NOT NULL DEFAULT now())`);

const server = http.createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
  req.on('end', async () => {
    try {
      const email = JSON.parse(body) as { from: string; to: string; subject: string; html?: string; scheduledAt?: string };
      const { rows } = await pool.query<{ id: string }>(
        'INSERT INTO peer_emails (from_address, to_address, subject, html, scheduled_at) VALUES ($1, $2, $3, $4, $5) RETURNING id',
        [email.from, email.to, email.subject, email.html ?? null, email.scheduledAt ?? null],
      );
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ emailId: rows[0]!.id }));
    } catch {
      res.writeHead(400).end();
    }
  });
});
server.listen(0, '127.0.0.1', () => console.log(`peer ${(server.address() as AddressInfo).port}`));
process.stdin.resume().on('end', async () => {
  server.close();
  await pool.end();
});
