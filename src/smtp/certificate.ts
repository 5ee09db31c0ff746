import { readFile, rename, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import path from 'node:path';

export type Certificate = { key: Buffer; cert: Buffer };

/** Where the warning about a self-signed certificate goes (the process's logger). */
type Warnings = { warn(message: string, fields?: Record<string, unknown>): void };

const KEY_FILE = 'submission-tls.key';
const CERT_FILE = 'submission-tls.crt';
// Long enough that nobody is surprised by an expiry; an operator who cares uses TLS_CERT_FILE.
const SELF_SIGNED_YEARS = 10;

const readPair = async (keyFile: string, certFile: string): Promise<Certificate> => ({
  key: await readFile(keyFile),
  cert: await readFile(certFile),
});

/**
 * The submission listeners' certificate: the operator's PEM files, or a self-signed one generated
 * once into DATA_DIR (private to the service, like everything there) and used again on every
 * start, with a warning that clients must be told to trust it or skip verification.
 */
export async function loadCertificate(
  options: { tls: { certFile: string; keyFile: string } | null; dataDir: string; hostName: string },
  log: Warnings,
): Promise<Certificate> {
  if (options.tls) {
    try {
      return await readPair(options.tls.keyFile, options.tls.certFile);
    } catch (error) {
      throw new Error(`TLS_CERT_FILE / TLS_KEY_FILE could not be read: ${(error as Error).message}`);
    }
  }
  const keyFile = path.join(options.dataDir, KEY_FILE);
  const certFile = path.join(options.dataDir, CERT_FILE);
  let pair: Certificate;
  try {
    pair = await readPair(keyFile, certFile);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    pair = await generateSelfSigned(options.hostName);
    // Written under temporary names and renamed, the certificate last: a crash in between leaves
    // no half-written pair that a later start would try to use.
    await writeFile(`${keyFile}.tmp`, pair.key, { mode: 0o600 });
    await writeFile(`${certFile}.tmp`, pair.cert, { mode: 0o600 });
    await rename(`${keyFile}.tmp`, keyFile);
    await rename(`${certFile}.tmp`, certFile);
  }
  log.warn('The SMTP listeners (submission, inbound) use a self-signed certificate: set TLS_CERT_FILE and TLS_KEY_FILE, or have clients trust it', {
    certificate: certFile,
  });
  return pair;
}

async function generateSelfSigned(hostName: string): Promise<Certificate> {
  const notBeforeDate = new Date();
  const notAfterDate = new Date(notBeforeDate);
  notAfterDate.setUTCFullYear(notAfterDate.getUTCFullYear() + SELF_SIGNED_YEARS);
  const dnsNames = [...new Set([hostName, 'localhost'])].filter((name) => isIP(name) === 0);
  const ips = [...new Set([hostName, '127.0.0.1', '::1'])].filter((name) => isIP(name) !== 0);
  // Loaded only here, on the first start without a certificate: the library (with the crypto
  // code it carries) takes tens of megabytes that every later start would hold for nothing.
  const { generate } = await import('selfsigned');
  const generated = await generate([{ name: 'commonName', value: hostName }], {
    keySize: 2048,
    algorithm: 'sha256',
    notBeforeDate,
    notAfterDate,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [...dnsNames.map((value) => ({ type: 2 as const, value })), ...ips.map((ip) => ({ type: 7 as const, ip }))],
      },
    ],
  });
  return { key: Buffer.from(generated.private), cert: Buffer.from(generated.cert) };
}

/** The one certificate of this server's SMTP listeners (submission and inbound), named after PUBLIC_URL's host. */
export const listenerCertificate = (config: { tls: { certFile: string; keyFile: string } | null; dataDir: string; publicUrl: string }, log: Warnings) =>
  loadCertificate({ tls: config.tls, dataDir: config.dataDir, hostName: new URL(config.publicUrl).hostname.replace(/^\[|\]$/g, '') }, log);
