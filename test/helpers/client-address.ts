import http from 'node:http';

export type AddressedResponse = { status: number; headers: Headers; text: string };
export type AddressedRequest = { method?: string; headers?: Record<string, string>; body?: string };

/** A node response as a fetch-like one: status, Headers and the whole body as text. */
function answer(incoming: http.IncomingMessage): Promise<AddressedResponse> {
  return new Promise((resolve, reject) => {
    let text = '';
    incoming.setEncoding('utf8');
    incoming.on('data', (chunk: string) => (text += chunk));
    incoming.on('error', reject);
    incoming.on('end', () => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(incoming.headers)) if (value !== undefined) headers.set(name, String(value));
      resolve({ status: incoming.statusCode!, headers, text });
    });
  });
}

/**
 * A request to `url` from a chosen loopback address (any of 127.0.0.0/8), on a connection of its
 * own, so that one test can be several clients of a per-address throttle.
 */
export function requestFrom(localAddress: string, url: string, request: AddressedRequest = {}): Promise<AddressedResponse> {
  return new Promise((resolve, reject) => {
    const outgoing = http.request(url, { method: request.method ?? 'GET', localAddress, agent: false, headers: request.headers ?? {} }, (incoming) => answer(incoming).then(resolve, reject));
    outgoing.on('error', reject);
    outgoing.end(request.body);
  });
}

/**
 * A request whose body is never finished: `sent` goes out, the rest never does (`headers` may
 * declare a longer Content-Length, or none: then the body is chunked). Answers the response the
 * server gives meanwhile, which it can only give without waiting for the whole body; the
 * connection is then dropped.
 */
export function requestUnfinished(localAddress: string, url: string, request: { headers: Record<string, string>; sent: string }): Promise<AddressedResponse> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const outgoing = http.request(url, { method: 'POST', localAddress, agent: false, headers: request.headers }, (incoming) => {
      answered = true;
      answer(incoming).then(resolve, reject).finally(() => outgoing.destroy());
    });
    // Once it has answered, the server may stop reading and close: the unfinished body then fails, as it should.
    outgoing.on('error', (error) => {
      if (!answered) reject(error);
    });
    outgoing.write(request.sent);
  });
}
