import SMTPConnection from 'nodemailer/lib/smtp-connection/index.js';

export type Delivery = { accepted: boolean; code: number | null; response: string; rejected: string[] };

/**
 * Hands one raw message to an SMTP server over a real connection, with the envelope given
 * (`from: ''` is the null sender bounces use), and answers what the server replied.
 */
export async function deliverRaw(port: number, envelope: { from: string; to: string[] }, raw: string | Buffer): Promise<Delivery> {
  const connection = new SMTPConnection({ host: '127.0.0.1', port, ignoreTLS: true, connectionTimeout: 5_000, socketTimeout: 10_000 });
  try {
    await new Promise<void>((resolve, reject) => {
      connection.once('error', reject);
      // Closed before the greeting (a server killed as it took the connection).
      connection.once('end', () => reject(new Error('the connection closed before the greeting')));
      connection.connect((error) => (error ? reject(error) : resolve()));
    });
    return await new Promise<Delivery>((resolve) => {
      // A server that dies mid-transaction (kill -9) ends the connection without answering the send.
      const lost = (reason: string) => resolve({ accepted: false, code: null, response: reason, rejected: [] });
      connection.once('end', () => lost('the connection closed'));
      connection.once('error', (error: Error) => lost(error.message));
      connection.send(envelope, raw, (error, info) => {
        if (error) {
          const e = error as Error & { responseCode?: number; response?: string; rejected?: string[] };
          resolve({ accepted: false, code: e.responseCode ?? null, response: e.response ?? e.message, rejected: e.rejected ?? [] });
        } else {
          resolve({ accepted: true, code: 250, response: info.response, rejected: info.rejected.map(String) });
        }
      });
    });
  } finally {
    connection.quit();
  }
}
