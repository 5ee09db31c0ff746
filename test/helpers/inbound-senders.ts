import { generateKeyPairSync } from 'node:crypto';
import { DkimSigner } from '../../src/domains/dkim.js';
import type { TestDnsServer } from './dns-server.js';

/**
 * Publishes the senders the inbound tests receive from: sender.test, whose SPF allows loopback,
 * whose DKIM key signs with the answered signer (selector sel1), and whose DMARC policy rejects;
 * and bank.test, whose policy rejects mail that neither SPF nor DKIM vouches for.
 */
export function publishSenders(dns: TestDnsServer): DkimSigner {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  dns.set('sel1._domainkey.sender.test', [{ type: 'TXT', value: `v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}` }]);
  dns.set('sender.test', [{ type: 'TXT', value: 'v=spf1 ip4:127.0.0.1 -all' }]);
  dns.set('_dmarc.sender.test', [{ type: 'TXT', value: 'v=DMARC1; p=reject' }]);
  dns.set('bank.test', [{ type: 'TXT', value: 'v=spf1 ip4:192.0.2.1 -all' }]);
  dns.set('_dmarc.bank.test', [{ type: 'TXT', value: 'v=DMARC1; p=reject' }]);
  return new DkimSigner('sender.test', 'sel1', privateKey);
}
