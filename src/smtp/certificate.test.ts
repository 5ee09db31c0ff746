import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordingLogger } from '../../test/helpers/log.js';
import { createLogger } from '../log.js';
import { loadCertificate, type Certificate } from './certificate.js';

const HOST = 'mail.example.test';
const silent = createLogger('silent');

let dir: string;
let dataDir: string;
let generated: Certificate;

beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'mailroom-certificate-'));
  dataDir = path.join(dir, 'data');
  await mkdir(dataDir, { mode: 0o700 });
  generated = await loadCertificate({ tls: null, dataDir, hostName: HOST }, silent);
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** The certificate a TLS client sees from a server that uses `certificate`. */
async function servedCertificate(certificate: Certificate, client: tls.ConnectionOptions = {}): Promise<tls.PeerCertificate> {
  const server = tls.createServer({ key: certificate.key, cert: certificate.cert }, (socket) => socket.end());
  server.on('tlsClientError', () => {});
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  try {
    const { port } = server.address() as AddressInfo;
    const socket = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...client });
    try {
      await once(socket, 'secureConnect');
      return socket.getPeerCertificate();
    } finally {
      socket.destroy();
    }
  } finally {
    server.close();
  }
}

describe('loadCertificate without TLS_CERT_FILE', () => {
  it('generates a key and certificate into DATA_DIR, readable by the service alone, and says so', async () => {
    const files = (await readdir(dataDir)).sort();
    expect(files).toStrictEqual(['submission-tls.crt', 'submission-tls.key']);
    for (const file of files) expect((await stat(path.join(dataDir, file))).mode & 0o777, file).toBe(0o600);
    expect(await readFile(path.join(dataDir, 'submission-tls.key'))).toStrictEqual(generated.key);
    expect(await readFile(path.join(dataDir, 'submission-tls.crt'))).toStrictEqual(generated.cert);
    expect(generated.key.toString()).toMatch(/^-----BEGIN (RSA )?PRIVATE KEY-----/);
    expect(generated.cert.toString()).toMatch(/^-----BEGIN CERTIFICATE-----/);
  });

  it('a later start uses the same certificate again, never a new one, and warns that it is self-signed', async () => {
    const { log, entries } = recordingLogger();
    const again = await loadCertificate({ tls: null, dataDir, hostName: HOST }, log);
    expect(again.cert).toStrictEqual(generated.cert);
    expect(again.key).toStrictEqual(generated.key);
    expect((await readdir(dataDir)).sort()).toStrictEqual(['submission-tls.crt', 'submission-tls.key']);
    expect(entries).toStrictEqual([expect.objectContaining({ level: 'warn', fields: { certificate: path.join(dataDir, 'submission-tls.crt') } })]);
    expect(entries[0]!.msg).toMatch(/self-signed/);
  });

  it('node:tls serves it; it names the host name and localhost, and a client that trusts it verifies it', async () => {
    const peer = await servedCertificate(generated);
    expect(peer.subject.CN).toBe(HOST);
    const altNames = (peer.subjectaltname ?? '').split(', ');
    expect(altNames).toEqual(expect.arrayContaining([`DNS:${HOST}`, 'DNS:localhost', 'IP Address:127.0.0.1']));
    // A client told to trust this certificate can check it fully, for each name it carries.
    for (const servername of [HOST, 'localhost']) {
      const verified = await servedCertificate(generated, { ca: generated.cert, servername, rejectUnauthorized: true });
      expect(verified.fingerprint256).toBe(peer.fingerprint256);
    }
  });

  it('for an IP address as the host name, the certificate names that address', async () => {
    const ipDir = await mkdtemp(path.join(dir, 'ip-'));
    const certificate = await loadCertificate({ tls: null, dataDir: ipDir, hostName: '192.0.2.7' }, silent);
    const peer = await servedCertificate(certificate);
    expect(peer.subject.CN).toBe('192.0.2.7');
    expect((peer.subjectaltname ?? '').split(', ')).toEqual(expect.arrayContaining(['IP Address:192.0.2.7', 'DNS:localhost', 'IP Address:127.0.0.1']));
    expect(peer.subjectaltname ?? '').not.toContain('DNS:192.0.2.7');
  });

  it('a key left without its certificate (a crash between the two renames) is replaced by a new pair that belongs together', async () => {
    const crashDir = await mkdtemp(path.join(dir, 'crash-'));
    await writeFile(path.join(crashDir, 'submission-tls.key'), generated.key, { mode: 0o600 });
    const certificate = await loadCertificate({ tls: null, dataDir: crashDir, hostName: HOST }, silent);
    expect(certificate.cert).not.toStrictEqual(generated.cert);
    expect(() => tls.createSecureContext({ key: certificate.key, cert: certificate.cert })).not.toThrow();
    expect(await readFile(path.join(crashDir, 'submission-tls.key'))).toStrictEqual(certificate.key);
    expect(await readFile(path.join(crashDir, 'submission-tls.crt'))).toStrictEqual(certificate.cert);
  });
});

describe('loadCertificate with TLS_CERT_FILE and TLS_KEY_FILE', () => {
  it('reads those files, and writes nothing into DATA_DIR nor warns', async () => {
    const own = await mkdtemp(path.join(dir, 'own-'));
    const certFile = path.join(own, 'fullchain.pem');
    const keyFile = path.join(own, 'privkey.pem');
    await writeFile(certFile, generated.cert);
    await writeFile(keyFile, generated.key);
    const emptyDataDir = await mkdtemp(path.join(dir, 'empty-'));
    const { log, entries } = recordingLogger();
    const certificate = await loadCertificate({ tls: { certFile, keyFile }, dataDir: emptyDataDir, hostName: HOST }, log);
    expect(certificate).toStrictEqual({ key: generated.key, cert: generated.cert });
    expect(await readdir(emptyDataDir)).toStrictEqual([]);
    expect(entries).toStrictEqual([]);
  });

  it('a configured file that cannot be read is an error naming TLS_CERT_FILE, never a fallback to a generated certificate', async () => {
    const own = await mkdtemp(path.join(dir, 'missing-'));
    const present = path.join(own, 'present.pem');
    await writeFile(present, generated.cert);
    const absent = path.join(own, 'absent.pem');
    for (const tlsFiles of [{ certFile: absent, keyFile: present }, { certFile: present, keyFile: absent }]) {
      await expect(loadCertificate({ tls: tlsFiles, dataDir: own, hostName: HOST }, silent)).rejects.toThrow(/TLS_CERT_FILE.*absent\.pem/);
    }
    expect((await readdir(own)).sort()).toStrictEqual(['present.pem']);
  });
});
