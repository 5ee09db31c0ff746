import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import { AnswerCache } from '../reuse-for.js';
import { checkedAddresses, DEFAULT_PORTS, guardedLookup, WebhookAddressError, type Guard } from './address-guard.js';

export type PostResult =
  | { ok: true; status: number; timeMs: number }
  | { ok: false; status: number | null; timeMs: number; error: string; retryAfterMs: number | null; gone: boolean };

/** A receiver's answer is only read for its first words; the rest could be anything, of any size. */
export const RESPONSE_BODY_CAP = 4096;
const ERROR_TEXT_CHARS = 200;
const MAX_RETRY_AFTER_MS = 86_400_000;
// Idle keep-alive connections are closed after this; one per busy receiver is worth keeping.
const IDLE_SOCKET_MS = 30_000;

/** A Retry-After value (delay-seconds or an HTTP-date) as milliseconds from `now`, at most a day; null when absent or unreadable. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | null {
  const text = value?.trim();
  if (!text) return null;
  // Date.parse reads almost anything ('-5' is a year); an HTTP-date starts with the day's name.
  const ms = /^\d+$/.test(text) ? Number(text) * 1000 : /^[A-Za-z]{3},? /.test(text) ? Date.parse(text) - now : NaN;
  if (!Number.isFinite(ms)) return null;
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

/** Receiver-chosen text made fit for a log line: control characters gone, at most `chars` long. */
const printable = (text: string, chars: number) =>
  Array.from(text.replace(/[\x00-\x1f\x7f]+/g, ' ').trim())
    .slice(0, chars)
    .join('');

function describeError(error: unknown): string {
  if (error instanceof WebhookAddressError) return error.message;
  // With several addresses node tries each and fails with all their errors together.
  const first = error instanceof AggregateError && !(error as NodeJS.ErrnoException).code ? error.errors[0] : error;
  const { code, message } = first as NodeJS.ErrnoException;
  if (code === 'ECONNREFUSED') return 'connection refused (ECONNREFUSED)';
  if (code === 'ECONNRESET') return 'connection reset (ECONNRESET)';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return `host unreachable (${code})`;
  return code && !message.includes(code) ? `${message} (${code})` : message;
}

/**
 * Sends webhook calls. Connections are kept alive per receiver and made only to addresses the guard
 * checked when each connection was opened; redirects are never followed, since a redirect could
 * lead anywhere the guard would refuse.
 */
export class WebhookPoster {
  readonly #guard: Guard;
  readonly #lookup: LookupFunction;
  readonly #timeoutMs: number;
  readonly #http: http.Agent;
  readonly #https: https.Agent;
  readonly #targets = new AnswerCache<string, Promise<URL | string>>({ maxEntries: 10_000 });

  constructor(options: Guard & { timeoutMs: number; maxSocketsPerHost?: number }) {
    this.#guard = { allow: options.allow, lookup: options.lookup, ports: options.ports };
    this.#lookup = guardedLookup(this.#guard);
    this.#timeoutMs = options.timeoutMs;
    const agentOptions = { keepAlive: true, maxSockets: options.maxSocketsPerHost ?? 4, timeout: IDLE_SOCKET_MS, lookup: this.#lookup };
    this.#http = new http.Agent(agentOptions);
    this.#https = new https.Agent(agentOptions);
  }

  /** POSTs `body` to `url`. Never throws: every failure is a result, with the reason in `error`. */
  async post(url: string, headers: Record<string, string>, body: string): Promise<PostResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const failed = (status: number | null, error: string) => ({ ok: false as const, status, timeMs: elapsed(), error, retryAfterMs: null, gone: false });

    const target = await this.#targets.get(url, () => this.#target(url));
    if (typeof target === 'string') return failed(null, target);

    return new Promise<PostResult>((resolve) => {
      let settled = false;
      const finish = (result: PostResult) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(result);
      };
      let answered: (() => void) | null = null;

      const request = (target.protocol === 'https:' ? https : http).request(target, {
        method: 'POST',
        agent: target.protocol === 'https:' ? this.#https : this.#http,
        lookup: this.#lookup,
        headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) },
      });

      // One limit for everything up to the status line. Once it has come, the status decides: a
      // body still trickling in is cut off, not counted as a timeout (a 2xx must not be sent again).
      const timer = setTimeout(() => {
        if (answered) answered();
        // Timers may fire a hair before the clock says the time is up; the attempt took it all.
        else finish({ ...failed(null, `timed out after ${this.#timeoutMs} ms`), timeMs: Math.max(elapsed(), this.#timeoutMs) });
        request.destroy();
      }, this.#timeoutMs);

      request.on('error', (error) => finish(failed(null, describeError(error))));
      request.on('response', (response) => {
        const status = response.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => finish(this.#result(status, response.headers, Buffer.concat(chunks).toString('utf8'), elapsed()));
        answered = done;
        response.on('data', (chunk: Buffer) => {
          if (size < RESPONSE_BODY_CAP) chunks.push(chunk.subarray(0, RESPONSE_BODY_CAP - size));
          size += chunk.length;
          if (size > RESPONSE_BODY_CAP) {
            done();
            // Reading on would let a receiver feed us without end; the connection cannot be reused.
            request.destroy();
          }
        });
        // 'end' when the body is complete (the connection goes back to the pool); 'error' or
        // 'close' when it was cut short: what arrived is all there is.
        response.on('end', done);
        response.on('error', done);
        response.on('close', done);
      });
      request.end(body);
    });
  }

  /**
   * Where `url` may be posted to, or why not. What is checked here depends on the URL alone (its
   * form, its port, and an IP literal's address), so it is checked once per URL: a name's
   * addresses are checked by the lookup of each connection opened.
   */
  async #target(url: string): Promise<URL | string> {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return 'the URL is not valid';
    }
    if (target.protocol !== 'http:' && target.protocol !== 'https:') return 'the URL must use http or https';
    // The operator may have closed a port since the webhook was saved.
    const badPort = this.#guard.allow.allowsHost(target.hostname) ? null : (this.#guard.ports ?? DEFAULT_PORTS).refusal(target);
    if (badPort) return badPort;
    // Node connects to an IP literal without calling lookup, so the guard must see it here.
    if (isIP(target.hostname.replace(/^\[(.*)\]$/, '$1')) !== 0) {
      try {
        await checkedAddresses(target.hostname, this.#guard);
      } catch (error) {
        return describeError(error);
      }
    }
    return target;
  }

  #result(status: number, headers: http.IncomingHttpHeaders, text: string, timeMs: number): PostResult {
    if (status >= 200 && status < 300) return { ok: true, status, timeMs };
    const error =
      status >= 300 && status < 400
        ? `redirect to ${printable(headers.location ?? '(no Location)', ERROR_TEXT_CHARS)} not followed`
        : [`HTTP ${status}`, printable(text, ERROR_TEXT_CHARS)].filter(Boolean).join(': ');
    const retryAfterMs = status === 429 || status === 503 ? parseRetryAfter(headers['retry-after']) : null;
    return { ok: false, status, timeMs, error, retryAfterMs, gone: status === 410 };
  }

  /** Closes every kept-alive connection. */
  close(): void {
    this.#http.destroy();
    this.#https.destroy();
  }
}
