import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One request as it reached the receiver. */
export type ReceivedRequest = {
  method: string;
  path: string;
  /** Header names lower-case, as node reads them; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** The body exactly as it came: what a signature covers. */
  rawBody: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: any;
  /** When the request's head arrived (Date.now()). */
  at: number;
  /** When the receiver answered it; null while it has not (delayed, hanging, or cut off). */
  answeredAt: number | null;
  /** The status it was answered with; null while it has not been (or never, when hung up on). */
  answeredStatus: number | null;
};

/**
 * How to answer one request: a status with headers and body (200 and an empty body by default),
 * after `delayMs`; `hang` never answers (the socket is destroyed at close); `destroy` drops the
 * connection without a word.
 */
export type Answer = {
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
  hang?: boolean;
  destroy?: boolean;
};

/** Decides the answer to a request; `index` counts the requests this receiver got, from 0. */
export type Answerer = (request: ReceivedRequest, index: number) => Answer;

export type WebhookReceiver = {
  /** `http://<host>:<port>/hook`, what a webhook is pointed at. */
  url: string;
  host: string;
  port: number;
  /** Every request so far, in arrival order. */
  received: ReceivedRequest[];
  /** TCP connections accepted so far (a connection that never sent a request counts too). */
  connections(): number;
  /** Replaces how requests from now on are answered. */
  answerWith(answerer: Answerer): void;
  /** Waits until `predicate` holds of what was received (checked on every arrival); answers the requests then. */
  waitFor(what: string, predicate: (received: ReceivedRequest[]) => boolean, timeoutMs?: number): Promise<ReceivedRequest[]>;
  /** Waits until at least `count` requests have arrived. */
  waitForCount(count: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  /** Destroys every open connection (kept-alive ones too), leaving the listener up. */
  dropConnections(): void;
  /** Stops listening and destroys every connection, hung requests included. Safe to call twice. */
  close(): Promise<void>;
};

// As long as wait.ts's waitFor: a bound for what never comes, not for what a busy machine delays.
const DEFAULT_WAIT_MS = 60_000;

/**
 * A real HTTP receiver for outgoing webhook calls, on `host` (127.0.0.1 by default) and `port`
 * (0: a free one), recording every request and answering as told (200 by default). Every wait is
 * bounded, and close() ends everything it holds open, so a test using it ends in seconds.
 */
export async function startWebhookReceiver(options: { host?: string; port?: number; answer?: Answerer } = {}): Promise<WebhookReceiver> {
  const host = options.host ?? '127.0.0.1';
  let answerer: Answerer = options.answer ?? (() => ({ status: 200 }));
  const received: ReceivedRequest[] = [];
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const waiters = new Set<() => void>();
  let closed = false;

  const server = http.createServer((request, response) => {
    const at = Date.now();
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try {
        json = JSON.parse(rawBody);
      } catch {
        json = undefined;
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(request.headers)) {
        if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value;
      }
      const record: ReceivedRequest = {
        method: request.method ?? '', path: request.url ?? '', headers, rawBody, json, at, answeredAt: null, answeredStatus: null,
      };
      const index = received.push(record) - 1;
      let answer: Answer;
      try {
        answer = answerer(record, index);
      } catch {
        answer = { status: 500, body: 'the test answerer threw' };
      }
      for (const wake of waiters) wake();
      const respond = () => {
        if (closed || answer.hang) return;
        if (answer.destroy) {
          request.socket.destroy();
          return;
        }
        const status = answer.status ?? 200;
        response.writeHead(status, { 'content-type': 'text/plain', ...answer.headers });
        response.end(answer.body ?? '', () => {
          record.answeredAt = Date.now();
          record.answeredStatus = status;
          for (const wake of waiters) wake();
        });
      };
      if (answer.delayMs) {
        const timer = setTimeout(() => {
          timers.delete(timer);
          respond();
        }, answer.delayMs);
        timers.add(timer);
      } else {
        respond();
      }
    });
  });
  server.keepAliveTimeout = 30_000;
  let connections = 0;
  server.on('connection', (socket: Socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;

  const waitFor = (what: string, predicate: (received: ReceivedRequest[]) => boolean, timeoutMs = DEFAULT_WAIT_MS) =>
    new Promise<ReceivedRequest[]>((resolve, reject) => {
      const check = () => {
        if (!predicate(received)) return false;
        finish();
        resolve(received);
        return true;
      };
      const finish = () => {
        clearTimeout(timer);
        waiters.delete(wake);
      };
      const wake = () => void check();
      const timer = setTimeout(() => {
        finish();
        const seen = received.map((r) => `${r.headers['x-usesend-event'] ?? r.method} ${r.answeredStatus ?? '-'}`);
        reject(new Error(`receiver on ${urlHost}:${port}: ${what} did not happen within ${timeoutMs} ms; got ${received.length}: ${seen.join(', ')}`));
      }, timeoutMs);
      waiters.add(wake);
      check();
    });

  const dropConnections = () => {
    for (const socket of sockets) socket.destroy();
  };

  return {
    url: `http://${urlHost}:${port}/hook`,
    host,
    port,
    received,
    connections: () => connections,
    answerWith(next) {
      answerer = next;
    },
    waitFor,
    waitForCount: (count, timeoutMs) => waitFor(`${count} requests`, (all) => all.length >= count, timeoutMs),
    dropConnections,
    async close() {
      if (closed) return;
      closed = true;
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      dropConnections();
      server.closeAllConnections();
      await stopped;
    },
  };
}

/** A loopback port nothing listens on (it was free a moment ago): connections to it are refused. */
export async function closedPort(host = '127.0.0.1'): Promise<number> {
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, host, () => resolve()));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/** Call ids of the requests, in arrival order (the webhook-id header). */
export const callIdsOf = (requests: ReceivedRequest[]) => requests.map((r) => r.headers['webhook-id']!);

/** Event types of the requests, in arrival order. */
export const typesOf = (requests: ReceivedRequest[]) => requests.map((r) => r.json?.type as string);
