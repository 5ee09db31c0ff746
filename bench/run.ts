/**
 * `npm run bench`: every benchmark on PostgreSQL (when reachable) and on the embedded PGlite, with
 * the figures written to BENCHMARKS.md together with the machine and the date.
 */
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import { benchContacts, type ContactsBenchResult } from './contacts.js';
import { benchEmails, type EmailsBenchResult } from './emails.js';
import { benchPostgresUrl, postgresReachable } from './postgres.js';

const databases: Array<'postgres' | 'pglite'> = (await postgresReachable()) ? ['postgres', 'pglite'] : ['pglite'];
if (databases.length === 1) console.error(`PostgreSQL not reachable at ${benchPostgresUrl}: measuring PGlite only`);

const contacts: ContactsBenchResult[] = [];
const emails: EmailsBenchResult[] = [];
for (const database of databases) {
  console.error(`contacts on ${database}…`);
  contacts.push(await benchContacts(database));
  console.error(`emails on ${database}…`);
  emails.push(await benchEmails(database === 'postgres' ? { databaseUrl: benchPostgresUrl } : {}));
}

const cpu = os.cpus();
const [load1] = os.loadavg();
const lines = [
  '# Benchmarks',
  '',
  `Measured ${new Date().toISOString().slice(0, 10)} by \`npm run bench\` on ${cpu.length} × ${cpu[0]?.model.trim()}, ` +
    `${Math.round(os.totalmem() / 2 ** 30)} GiB RAM, ${os.type()} ${os.release()}, Node ${process.version}. ` +
    `Load generator, server and SMTP sink share the same cores; load average ${load1?.toFixed(1)} when the run ended.`,
  '',
  '## Contacts',
  '',
  'Bulk upsert: 100,000 new contacts sent as 10 sequential `POST /v1/contactBooks/{id}/contacts/bulk` requests of',
  '10,000. Read: `GET /v1/contactBooks/{id}/contacts/{email}` under autocannon for the stated time and connections,',
  'against the server running as its own process.',
  '',
  '| Database | Bulk upsert (contacts/s) | 100k in (s) | GET one (req/s) | p50 (ms) | p99 (ms) | Errors |',
  '|---|---|---|---|---|---|---|',
  ...contacts.map(
    (r) =>
      `| ${r.database} | ${r.bulkUpsert.contactsPerSecond.toLocaleString('en')} | ${r.bulkUpsert.seconds} | ` +
      `${r.getOne.requestsPerSecond.toLocaleString('en')} | ${r.getOne.p50Ms} | ${r.getOne.p99Ms} | ${r.getOne.errors} |`,
  ),
  '',
  '## Transactional email',
  '',
  'Emails accepted through `POST /v1/emails`, then delivered DKIM-signed over SMTP to a loopback smtp-server sink',
  'running in its own process. Accept and delivery are measured as separate phases.',
  '',
  '| Database | Emails | Accept (req/s) | p50 (ms) | p99 (ms) | Delivered (msg/s) | Peak RSS (MB) |',
  '|---|---|---|---|---|---|---|',
  ...emails.map(
    (r) =>
      `| ${r.database} | ${r.emails.toLocaleString('en')} | ${r.accept.requestsPerSecond.toLocaleString('en')} | ` +
      `${r.accept.p50Ms} | ${r.accept.p99Ms} | ${r.delivery.messagesPerSecond.toLocaleString('en')} | ${r.peakRssMb} |`,
  ),
  '',
];
await writeFile('BENCHMARKS.md', lines.join('\n'));
console.log(lines.join('\n'));
