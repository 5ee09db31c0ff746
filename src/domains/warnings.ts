import { isIP } from 'node:net';
import { parse } from 'tldts';
import type { Config } from '../config.js';
import { ADDRESS_CLASS_NAMES, classifyAddress } from '../webhooks/address-guard.js';

type WarningConfig = Pick<Config, 'smtpUrl' | 'publicUrl' | 'inboundMxHost' | 'spfInclude'> & { direct: Pick<Config['direct'], 'ehloName'> };

const unbracket = (host: string) => host.replace(/^\[|\]$/g, '');

/**
 * Why other machines cannot reach `host` by that name, or null when they may: `localhost` and its
 * subdomains, names under no public top-level domain (`mailhost`, `box.local`, `x.test`: public DNS
 * answers none of them), and addresses outside the public internet (loopback, private,
 * link-local…). With `ipAllowed` false, any IP address, as an MX or an SPF include must name a host.
 */
function unreachable(host: string, ipAllowed: boolean): string | null {
  const bare = unbracket(host.toLowerCase());
  if (isIP(bare) !== 0) {
    if (!ipAllowed) return `${bare} is an IP address, and this record must name a host`;
    const kind = classifyAddress(bare);
    return kind === 'public' ? null : `${bare} is ${ADDRESS_CLASS_NAMES[kind]}, which only this machine or its network can reach`;
  }
  if (bare === 'localhost' || bare.endsWith('.localhost')) return `${bare} names whichever machine looks it up, never this server`;
  const { isIcann, isPrivate } = parse(bare, { allowPrivateDomains: true });
  return isIcann || isPrivate ? null : `${bare} is under no public top-level domain, so public DNS does not answer for it`;
}

/**
 * What in the server's configuration stops a domain's mail from working beyond this machine: each
 * warning names the setting and the fix. Defaults that suit a first try on a laptop (mail kept in
 * files, links and the MX record on localhost) would otherwise fail silently once real mail goes out.
 */
export function domainWarnings(config: WarningConfig): string[] {
  const warnings: string[] = [];
  if (!config.smtpUrl) {
    warnings.push(
      'Mail is not delivered to anyone: with no SMTP_URL set, each message is only saved as a file in the outbox folder of DATA_DIR, and counted as delivered. ' +
        'Set SMTP_URL to the relay that sends this server\'s mail, such as smtps://user:password@smtp.example.com:465.',
    );
  }
  if (config.smtpUrl === 'direct') {
    const helo = config.direct.ehloName;
    const heloHost = helo.startsWith('[') ? `${helo} is an address, not a name` : unreachable(helo, false);
    if (heloHost) {
      warnings.push(
        `This server delivers mail itself (SMTP_URL=direct) and says HELO as ${helo}, which receivers cannot match to it: ${heloHost}. ` +
          "Set EHLO_NAME to this server's public host name, one whose address points back to it (PTR) and is in your SPF record.",
      );
    }
  }
  const linkHost = unreachable(new URL(config.publicUrl).hostname, true);
  if (linkHost) {
    warnings.push(
      `Links in mail (open and click tracking, unsubscribe, double opt-in) point at ${config.publicUrl}, which recipients cannot open: ${linkHost}. ` +
        'Set PUBLIC_URL to the address this server is reached at from the internet, such as https://mail.example.com.',
    );
  }
  const mxHost = unreachable(config.inboundMxHost, false);
  if (mxHost) {
    warnings.push(
      `The MX record points at ${config.inboundMxHost}, so bounces and complaints cannot come back: ${mxHost}. ` +
        'Set INBOUND_MX_HOST to the public host name of this server\'s inbound SMTP listener (it defaults to PUBLIC_URL\'s host).',
    );
  }
  const spfHost = unreachable(config.spfInclude, false);
  if (spfHost) {
    warnings.push(
      `The SPF record includes ${config.spfInclude}, which receivers cannot look up, so they cannot tell that your mail comes from this server: ${spfHost}. ` +
        'Set SPF_INCLUDE to a public host name whose SPF record lists the addresses this server sends from (unset, it is _spf. followed by INBOUND_MX_HOST).',
    );
  }
  return warnings;
}
