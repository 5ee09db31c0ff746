import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DkimSigner, generateDkimKeyPair } from '../src/domains/dkim.js';
import { loadDomainSettings } from '../src/sending/domain-settings.js';
import { verifyDkim } from './helpers/dkim.js';
import type { TestDnsServer } from './helpers/dns-server.js';
import { createDomain, startServerWithDns } from './helpers/domains.js';
import type { TestServer } from './helpers/server.js';

let dns: TestDnsServer;
let server: TestServer;
let teamId: number;
let key: string;

let stop: () => Promise<void>;

beforeAll(async () => {
  ({ dns, server, teamId, key, stop } = await startServerWithDns());
});
afterAll(() => stop());

const message = (from: string) =>
  [
    `From: "Acme News" <${from}>`,
    'To: reader@example.org',
    'Subject:   A subject   with  extra   spaces',
    '   folded onto a second line',
    'Date: Sun, 22 Nov 2026 09:00:00 +0000',
    'Message-ID: <1@mailroom.test>',
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
    '',
    'Hello — this line has trailing spaces   ',
    '',
    'and\ttabs\t inside.',
    '',
    '',
  ].join('\r\n');

describe('DKIM', () => {
  it("a message signed with the domain's key verifies against the TXT record served by DNS", async () => {
    const domain = await createDomain(server, key, 'signed.test');
    dns.serve(domain);
    const selector = domain.dnsRecords[0].name.split('.')[0];
    const [served] = await dns.resolver.resolveTxt(`${selector}._domainkey.signed.test`);
    expect(served!.length).toBeGreaterThan(1);

    const signer = (await loadDomainSettings(server.deps, teamId, domain.id))!.signer;
    const signed = await signer.sign(message('news@signed.test'));
    expect(signed.toString()).toMatch(/^DKIM-Signature: v=1;\r\n\ta=rsa-sha256;/);

    const [result] = await verifyDkim(dns, signed);
    expect(result).toMatchObject({ signingDomain: 'signed.test', selector, status: { result: 'pass' } });
  });

  it('a signed message changed afterwards, or signed with another key, does not verify', async () => {
    const domain = await createDomain(server, key, 'tampered.test');
    dns.serve(domain);
    const signer = (await loadDomainSettings(server.deps, teamId, domain.id))!.signer;

    const tampered = (await signer.sign(message('news@tampered.test'))).toString().replace('trailing spaces', 'other words');
    expect((await verifyDkim(dns, tampered))[0]!.status.result).toBe('neutral');

    const otherKey = await generateDkimKeyPair();
    const impostor = new DkimSigner('tampered.test', signer.selector, otherKey.privateKey);
    expect((await verifyDkim(dns, await impostor.sign(message('news@tampered.test'))))[0]!.status.result).toBe('fail');
  });

  it('bodies with nothing to relax, with bare line feeds, with trailing empty lines, or empty, verify', async () => {
    const domain = await createDomain(server, key, 'plain.test');
    dns.serve(domain);
    const signer = (await loadDomainSettings(server.deps, teamId, domain.id))!.signer;
    const headers = message('news@plain.test').split('\r\n\r\n')[0];
    for (const body of ['Hello there\r\nsecond line\r\n', 'Hello there\nsecond line\n', 'Hello\r\n\r\n\r\n', '', 'no line ending']) {
      const signed = await signer.sign(`${headers}\r\n\r\n${body}`);
      expect((await verifyDkim(dns, signed))[0]!.status.result, JSON.stringify(body)).toBe('pass');
    }
  });

  it('the signer takes bytes as well as text, and every header instance it signs is covered', async () => {
    const domain = await createDomain(server, key, 'bytes.test');
    dns.serve(domain);
    const signer = (await loadDomainSettings(server.deps, teamId, domain.id))!.signer;
    const withTwoTo = message('news@bytes.test').replace('To: reader@example.org', 'To: a@example.org\r\nTo: b@example.org');
    const signed = await signer.sign(Buffer.from(withTwoTo));
    expect((await verifyDkim(dns, signed))[0]!.status.result).toBe('pass');
    expect(signed.toString()).toMatch(/h=from:to:to:subject:date:message-id:mime-version:content-type:content-transfer-encoding;/);
    const secondToChanged = signed.toString().replace('To: b@example.org', 'To: c@example.org');
    expect((await verifyDkim(dns, secondToChanged))[0]!.status.result).not.toBe('pass');
    expect(await loadDomainSettings(server.deps, teamId + 1000, domain.id)).toBeNull();
  });
});
