/**
 * The inbound benchmark's DNS, in a process of its own as a resolver would be: the loopback DNS
 * server of the tests, publishing what authenticating the benchmark's mail asks for: the sending
 * domain's SPF record (`v=spf1 ip4:127.0.0.1 -all`), its DKIM key and its DMARC policy.
 *
 *   tsx bench/inbound/dns.ts <sending domain> <DKIM selector> <base64 SubjectPublicKeyInfo>
 *
 * Prints `dns <port>` once listening (127.0.0.1, UDP and TCP); for each line on stdin,
 * `queries {"TXT sel._domainkey.…": n, …}` (every question asked so far, by type and name). Its
 * stdin ending stops it.
 */
import { startDnsServer } from '../../test/helpers/dns-server.js';

const [domain = 'sender.bench.test', selector = 'bench', publicKey = ''] = process.argv.slice(2);

const dns = await startDnsServer();
dns.set(domain, [{ type: 'TXT', value: 'v=spf1 ip4:127.0.0.1 -all' }]);
dns.set(`${selector}._domainkey.${domain}`, [{ type: 'TXT', value: `v=DKIM1; k=rsa; p=${publicKey}` }]);
dns.set(`_dmarc.${domain}`, [{ type: 'TXT', value: 'v=DMARC1; p=reject' }]);

process.stdout.write(`dns ${dns.address.split(':')[1]}\n`);
let buffer = '';
process.stdin.setEncoding('utf8').on('data', (chunk: string) => {
  buffer += chunk;
  for (let i = buffer.indexOf('\n'); i >= 0; i = buffer.indexOf('\n')) {
    buffer = buffer.slice(i + 1);
    const counts: Record<string, number> = {};
    for (const query of dns.queries) counts[query] = (counts[query] ?? 0) + 1;
    process.stdout.write(`queries ${JSON.stringify(counts)}\n`);
  }
});
process.stdin.on('end', async () => {
  await dns.close();
  process.exit(0);
});
