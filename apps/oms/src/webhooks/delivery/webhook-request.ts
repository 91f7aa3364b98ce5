import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { entryBound } from '@tracking/core';
import { LRUCache } from 'lru-cache';
import { Webhook } from 'standardwebhooks';
import type { WebhookEntity } from '../webhook.entity.js';

/** Response bodies are read up to this many bytes (then the connection is dropped); the log keeps MAX_LOGGED_BYTES of them. */
export const MAX_RESPONSE_BYTES = 64 * 1024;
export const MAX_LOGGED_BYTES = 1024;

/** The secrets a delivery is signed with: the current one and, while it overlaps, the previous one. */
export type SigningSecrets = Pick<WebhookEntity, 'secret' | 'previousSecret' | 'previousSecretExpiresAt'>;

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
  /** Resolves each new connection's host: the SSRF policy's `safeLookup`, failing with code `ForbiddenAddress`. */
  lookup: LookupFunction;
  /** Refuses an IP-literal host before connecting (Node calls no lookup for literals). */
  isForbiddenLiteral: (address: string) => boolean;
}

/**
 * Sends signed webhook requests (Standard Webhooks, signed by the `standardwebhooks` package) over
 * keep-alive agents. Redirects are never followed (node:http does not follow them; a 3xx is a failure).
 */
export class WebhookClient {
  private readonly agentOptions = { keepAlive: true, maxFreeSockets: 32, scheduling: 'lifo' as const };
  private readonly httpAgent = new HttpAgent(this.agentOptions);
  private readonly httpsAgent = new HttpsAgent(this.agentOptions);
  /** Parsed secrets by their text; `new Webhook` decodes the base64 each time otherwise. */
  private readonly signers = new LRUCache<string, Webhook>({ ...entryBound(10000), memoMethod: (secret) => new Webhook(secret) });

  constructor(private readonly options: WebhookClientOptions) {}

  /** POSTs `payload` to `url`, signed; never throws. The timeout covers the answer's headers and body. */
  async send(url: string, messageId: string, payload: string, secrets: SigningSecrets): Promise<AttemptResult> {
    const started = performance.now();
    const signal = AbortSignal.timeout(this.options.timeoutMs);
    const result = await this.post(url, messageId, payload, secrets, signal).catch((error: NodeJS.ErrnoException) => {
      if (signal.aborted) return { ok: false, statusCode: null, error: `timeout: no complete answer within ${this.options.timeoutMs} ms`, kind: 'timeout' } as const;
      const kind = error.code === 'ForbiddenAddress' ? 'forbidden_address' : 'network_error'; // the SSRF policy's refusal, or the network's
      return { ok: false, statusCode: null, error: loggableText(error.code ? `${error.code}: ${error.message}` : error.message), kind } as const;
    });
    return { ...result, durationMs: Math.round(performance.now() - started) };
  }

  private async post(url: string, messageId: string, payload: string, secrets: SigningSecrets, signal: AbortSignal): Promise<Omit<AttemptResult, 'durationMs'>> {
    const target = new URL(url); // judged valid when the webhook was saved (url-policy.ts)
    const host = target.hostname.replace(/^\[(.*)\]$/, '$1');
    if (isIP(host) !== 0 && this.options.isForbiddenLiteral(host)) {
      return { ok: false, statusCode: null, error: `ForbiddenAddress: ${host} is an address webhooks may not reach`, kind: 'forbidden_address' };
    }
    const now = new Date();
    const body = Buffer.from(payload);
    // One `v1,<signature>` per live secret, space-separated, the current one first.
    const keys = [secrets.secret];
    if (secrets.previousSecret !== null && secrets.previousSecretExpiresAt !== null && secrets.previousSecretExpiresAt > now) keys.push(secrets.previousSecret);
    const headers = {
      'content-type': 'application/json',
      'content-length': String(body.length),
      'user-agent': 'tracking-webhooks/1',
      'webhook-id': messageId,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': keys.map((key) => this.signers.memo(key).sign(messageId, now, payload)).join(' '),
    };
    const https = target.protocol === 'https:';
    const options = { method: 'POST', headers, agent: https ? this.httpsAgent : this.httpAgent, lookup: this.options.lookup, signal };
    const response = await new Promise<IncomingMessage>((resolve, reject) => {
      (https ? httpsRequest : httpRequest)(target, options, resolve).on('error', reject).end(body);
    });
    const text = await readBody(response);
    const statusCode = response.statusCode ?? 0;
    if (statusCode >= 200 && statusCode < 300) return { ok: true, statusCode, error: null, kind: 'success' };
    const retryAfter = statusCode === 429 || statusCode === 503 ? (response.headers['retry-after'] as string | undefined) : undefined;
    return { ok: false, statusCode, error: loggableText(text === '' ? `HTTP ${statusCode}` : `HTTP ${statusCode}: ${text}`), retryAfter, kind: 'http_error' };
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }
}

/** The body as text, read up to MAX_RESPONSE_BYTES; past that the response (and its connection) is dropped and the prefix is the body. */
async function readBody(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    // Leaving the loop destroys the response, without an error.
    if ((size += chunk.length) >= MAX_RESPONSE_BYTES) break;
  }
  return Buffer.concat(chunks).subarray(0, MAX_RESPONSE_BYTES).toString('utf8');
}

/**
 * `text` as the delivery log keeps it: at most MAX_LOGGED_BYTES of UTF-8, never cut inside a character, and
 * storable in jsonb (a receiver's answer may hold any bytes): U+0000 and lone surrogates become U+FFFD.
 */
export function loggableText(text: string): string {
  return new TextDecoder().decode(Buffer.from(text.replaceAll('\u0000', '\uFFFD')).subarray(0, MAX_LOGGED_BYTES), { stream: true });
}
