import { isIP } from 'node:net';
import os from 'node:os';

/** How to reach and talk to the relay, read from SMTP_URL. */
export type RelayOptions = {
  host: string;
  port: number;
  /** TLS from the first byte (`smtps://`, or `secure=true`). */
  secure: boolean;
  /** Refuse to send over a session STARTTLS did not encrypt. */
  requireTLS: boolean;
  /** Never upgrade with STARTTLS, even when offered. */
  ignoreTLS: boolean;
  rejectUnauthorized: boolean;
  /** The name the relay's certificate must carry (SNI); the host when it is a name. */
  servername: string | undefined;
  auth: { user: string; pass: string } | null;
  /** What we call ourselves in EHLO. */
  clientName: string;
  /** The source address to connect from (an IP pool's); unset: the system's choice. */
  localAddress?: string;
};

const flag = (value: string, name: string) => {
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  throw new Error(`SMTP_URL: ${name} must be true or false, not "${value}"`);
};

/**
 * Reads `smtp://user:pass@host:port/?setting=value` (or `smtps://`). The settings a relay may need
 * are `requireTLS`, `ignoreTLS`, `secure`, `name` (the EHLO name), `tls.rejectUnauthorized` and
 * `tls.servername`; any other is refused, so a typo cannot silently send in clear text.
 */
export function parseRelayUrl(text: string): RelayOptions {
  const url = new URL(text);
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') throw new Error(`SMTP_URL: the scheme must be smtp:// or smtps://, not ${url.protocol}//`);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!host) throw new Error('SMTP_URL names no host');
  const options: RelayOptions = {
    host,
    port: 0,
    secure: url.protocol === 'smtps:',
    requireTLS: false,
    ignoreTLS: false,
    rejectUnauthorized: true,
    servername: isIP(host) ? undefined : host,
    auth: url.username ? { user: decodeURIComponent(url.username), pass: decodeURIComponent(url.password) } : null,
    clientName: os.hostname() || 'localhost',
  };
  for (const [name, value] of url.searchParams) {
    switch (name) {
      case 'secure': options.secure = flag(value, name); break;
      case 'requireTLS': options.requireTLS = flag(value, name); break;
      case 'ignoreTLS': options.ignoreTLS = flag(value, name); break;
      case 'tls.rejectUnauthorized': options.rejectUnauthorized = flag(value, name); break;
      case 'tls.servername': options.servername = value; break;
      case 'name': options.clientName = value; break;
      default: throw new Error(`SMTP_URL: unknown setting "${name}" (known: secure, requireTLS, ignoreTLS, name, tls.rejectUnauthorized, tls.servername)`);
    }
  }
  if (options.requireTLS && options.ignoreTLS) throw new Error('SMTP_URL: requireTLS and ignoreTLS contradict each other');
  options.port = url.port ? Number(url.port) : options.secure ? 465 : 587;
  return options;
}
