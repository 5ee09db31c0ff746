import { describe, expect, it } from 'vitest';
import { domainWarnings } from './warnings.js';

/** A configuration that works beyond this machine, changed by `changes`. */
const warningsFor = (changes: Partial<Parameters<typeof domainWarnings>[0]>) =>
  domainWarnings({
    smtpUrl: 'smtps://relay.example.com', publicUrl: 'https://mail.example.com', inboundMxHost: 'mail.example.com', spfInclude: '_spf.mail.example.com',
    direct: { ehloName: 'mail.example.com' }, ...changes,
  });

describe('domainWarnings', () => {
  it('a configuration reachable from the internet has none, public IP addresses and private suffixes (github.io) included', () => {
    expect(warningsFor({})).toEqual([]);
    expect(warningsFor({ publicUrl: 'http://93.184.216.34:8080' })).toEqual([]);
    expect(warningsFor({ inboundMxHost: 'mailroom.github.io', spfInclude: '_spf.example.co.uk' })).toEqual([]);
  });

  it('links on a loopback, private or link-local address, or on a name no public DNS answers, name PUBLIC_URL', () => {
    for (const [publicUrl, why] of [
      ['http://127.0.0.1:3000', '127.0.0.1 is a loopback address'],
      ['http://[::1]:3000', '::1 is a loopback address'],
      ['http://192.168.1.10:3000', '192.168.1.10 is a private address'],
      ['http://169.254.1.1', '169.254.1.1 is a link-local address'],
      ['http://localhost:3000', 'localhost names whichever machine looks it up, never this server'],
      ['https://mailroom.local', 'mailroom.local is under no public top-level domain'],
    ]) {
      const [warning, ...others] = warningsFor({ publicUrl });
      expect(others, publicUrl).toEqual([]);
      expect(warning, publicUrl).toContain(`point at ${publicUrl}, which recipients cannot open: ${why}`);
      expect(warning, publicUrl).toContain('Set PUBLIC_URL');
    }
  });

  it('an MX host that is localhost, an IP address, one label or under no public TLD names INBOUND_MX_HOST', () => {
    for (const [inboundMxHost, why] of [
      ['localhost', 'localhost names whichever machine looks it up, never this server'],
      ['203.0.113.7', '203.0.113.7 is an IP address, and this record must name a host'],
      ['mailhost', 'mailhost is under no public top-level domain'],
      ['inbound.mailroom.test', 'inbound.mailroom.test is under no public top-level domain'],
    ]) {
      const [warning, ...others] = warningsFor({ inboundMxHost });
      expect(others, inboundMxHost).toEqual([]);
      expect(warning, inboundMxHost).toContain(`The MX record points at ${inboundMxHost}, so bounces and complaints cannot come back: ${why}`);
      expect(warning, inboundMxHost).toContain('Set INBOUND_MX_HOST');
    }
  });

  it('an SPF include no receiver can look up names SPF_INCLUDE; no relay names SMTP_URL', () => {
    expect(warningsFor({ spfInclude: '_spf.localhost' })).toEqual([expect.stringMatching(/^The SPF record includes _spf\.localhost, .*Set SPF_INCLUDE/)]);
    expect(warningsFor({ smtpUrl: undefined })).toEqual([expect.stringMatching(/^Mail is not delivered to anyone: with no SMTP_URL set, .*Set SMTP_URL/)]);
  });

  it('delivering directly with a HELO name receivers cannot match to this server names EHLO_NAME', () => {
    expect(warningsFor({ smtpUrl: 'direct' })).toEqual([]);
    for (const ehloName of ['[127.0.0.1]', 'localhost', 'box.local']) {
      expect(warningsFor({ smtpUrl: 'direct', direct: { ehloName } }), ehloName).toEqual([expect.stringMatching(new RegExp(`^This server delivers mail itself \\(SMTP_URL=direct\\) and says HELO as ${ehloName.replace(/[[\].]/g, '\\$&')}, .*Set EHLO_NAME`))]);
    }
  });
});
