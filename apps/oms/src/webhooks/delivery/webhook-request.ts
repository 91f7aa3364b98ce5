import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** Response bodies are read up to this many bytes (then the connection is dropped). */
export const MAX_RESPONSE_BYTES = 64 * 1024;
/** The attempt log keeps at most this many bytes of a response body. */
export const MAX_LOGGED_BYTES = 1024;

/** The secrets a delivery is signed with: the current one and, while it overlaps, the previous one. */
export interface SigningSecrets {
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
}

/** One attempt's outcome: `ok` for a 2xx within the timeout. */
export interface AttemptResult {
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  /** Why it failed: `HTTP 500: <body>`, `timeout`, a network error code, `ForbiddenAddress: ...`; null on success. */
  error: string | null;
  /** `Retry-After` of a 429 or 503, raw. */
  retryAfter?: string;
  /** The kind of outcome, for metrics. */
  kind: 'success' | 'http_error' | 'timeout' | 'network_error' | 'forbidden_address';
}

export interface WebhookClientOptions {
  timeoutMs: number;
  /**
   * Resolves the receiver's host for each new connection; the SSRF policy's `safeLookup` in production,
   * which fails the connection with code `ForbiddenAddress` for an address webhooks may not reach.
   */
  lookup: LookupFunction;
  /** Refuses an IP-literal host before connecting (Node calls no lookup for literals). */
  isForbiddenLiteral: (address: string) => boolean;
  /** Open connections kept per receiver between requests. */
  maxFreeSockets?: number;
}

/**
 * Sends signed webhook requests (Standard Webhooks, signed by the `standardwebhooks` package) over
 * keep-alive agents. Redirects are never followed (node:http does not follow them; a 3xx is a failure).
 */
export class WebhookClient {
  private readonly httpAgent: HttpAgent;
  private readonly httpsAgent: HttpsAgent;
  /** Parsed secrets by their text; `new Webhook` decodes the base64 each time otherwise. */
  private readonly signers = new Map<string, Webhook>();

  constructor(private readonly options: WebhookClientOptions) {
    const agentOptions = { keepAlive: true, maxFreeSockets: options.maxFreeSockets ?? 32, scheduling: 'lifo' as const };
    this.httpAgent = new HttpAgent(agentOptions);
    this.httpsAgent = new HttpsAgent(agentOptions);
  }

  /** `webhook-signature`: one `v1,<sig>` per live secret, space-separated (the current one first). */
  signature(secrets: SigningSecrets, messageId: string, timestamp: Date, payload: string, now: Date = timestamp): string {
    const keys = [secrets.secret];
    if (secrets.previousSecret !== null && secrets.previousSecretExpiresAt !== null && secrets.previousSecretExpiresAt > now) {
      keys.push(secrets.previousSecret);
    }
    return keys.map((key) => this.signer(key).sign(messageId, timestamp, payload)).join(' ');
  }

  private signer(secret: string): Webhook {
    let signer = this.signers.get(secret);
    if (!signer) {
      // Bounded: secrets change only on rotation, but a long-running worker sees many webhooks.
      if (this.signers.size >= 10000) this.signers.clear();
      signer = new Webhook(secret);
      this.signers.set(secret, signer);
    }
    return signer;
  }

  /** POSTs `payload` to `url`, signed; never throws. */
  send(url: string, messageId: string, payload: string, secrets: SigningSecrets): Promise<AttemptResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return Promise.resolve({ ok: false, statusCode: null, durationMs: 0, error: 'invalid URL', kind: 'network_error' });
    }
    const host = target.hostname.startsWith('[') ? target.hostname.slice(1, -1) : target.hostname;
    if (isIP(host) !== 0 && this.options.isForbiddenLiteral(host)) {
      return Promise.resolve({ ok: false, statusCode: null, durationMs: 0, error: `ForbiddenAddress: ${host} is an address webhooks may not reach`, kind: 'forbidden_address' });
    }
    const now = new Date();
    const body = Buffer.from(payload);
    const headers = {
      'content-type': 'application/json',
      'content-length': String(body.length),
      'user-agent': 'tracking-webhooks/1',
      'webhook-id': messageId,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': this.signature(secrets, messageId, now, payload),
    };
    const https = target.protocol === 'https:';
    return new Promise<AttemptResult>((resolve) => {
      let settled = false;
      const finish = (result: Omit<AttemptResult, 'durationMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...result, durationMs: elapsed() });
      };
      const request = (https ? httpsRequest : httpRequest)(
        target,
        { method: 'POST', headers, agent: https ? this.httpsAgent : this.httpAgent, lookup: this.options.lookup },
        (response) => {
          readBody(response).then(
            (text) => {
              const statusCode = response.statusCode ?? 0;
              if (statusCode >= 200 && statusCode < 300) return finish({ ok: true, statusCode, error: null, kind: 'success' });
              const retryAfter = statusCode === 429 || statusCode === 503 ? (response.headers['retry-after'] as string | undefined) : undefined;
              finish({ ok: false, statusCode, error: truncateBytes(text === '' ? `HTTP ${statusCode}` : `HTTP ${statusCode}: ${text}`), retryAfter, kind: 'http_error' });
            },
            (error: Error) => finish(networkFailure(error)),
          );
        },
      );
      const timer = setTimeout(() => {
        finish({ ok: false, statusCode: null, error: `timeout: no complete answer within ${this.options.timeoutMs} ms`, kind: 'timeout' });
        request.destroy();
      }, this.options.timeoutMs);
      request.on('error', (error) => finish(networkFailure(error)));
      request.end(body);
    });
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

function networkFailure(error: NodeJS.ErrnoException): Omit<AttemptResult, 'durationMs'> {
  if (error.code === 'ForbiddenAddress') return { ok: false, statusCode: null, error: truncateBytes(`ForbiddenAddress: ${error.message}`), kind: 'forbidden_address' };
  return { ok: false, statusCode: null, error: truncateBytes(error.code ? `${error.code}: ${error.message}` : error.message), kind: 'network_error' };
}

/**
 * The body as text, read up to MAX_RESPONSE_BYTES; past that the response is dropped (and its connection)
 * and the prefix read is the body. The promise settles once: dropping the response emits `aborted`, which
 * must not turn a complete prefix (a 2xx with a large body) into a failure.
 */
function readBody(response: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      outcome();
    };
    response.on('data', (chunk: Buffer) => {
      if (settled) return;
      chunks.push(chunk);
      size += chunk.length;
      if (size >= MAX_RESPONSE_BYTES) {
        settle(() => resolve(Buffer.concat(chunks).subarray(0, MAX_RESPONSE_BYTES).toString('utf8')));
        response.destroy();
      }
    });
    response.on('end', () => settle(() => resolve(Buffer.concat(chunks).toString('utf8'))));
    response.on('error', (error) => settle(() => reject(error)));
    response.on('aborted', () => settle(() => reject(Object.assign(new Error('response aborted'), { code: 'ECONNRESET' }))));
  });
}

/** `text` cut to at most MAX_LOGGED_BYTES of UTF-8, never inside a character. */
export function truncateBytes(text: string, max = MAX_LOGGED_BYTES): string {
  const bytes = Buffer.from(text);
  if (bytes.length <= max) return text;
  return new TextDecoder().decode(bytes.subarray(0, max), { stream: true });
}
