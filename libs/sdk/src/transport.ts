import { TrackingApiError } from './errors.js';
import { abortable, backoffDelay, DEFAULT_RETRY_POLICY, parseRetryAfter, retryAfterDelay, type RetryPolicy, sleep } from './retry.js';
import { TokenCache, type TokenResponse } from './tokens.js';

export interface TrackingClientOptions {
  /** The API's base address, e.g. `https://tracking.example.com` (without `/v1`). */
  baseUrl: string;
  tenantId: string;
  applicationId: string;
  /** Keep it out of source control and out of code that runs in browsers. */
  applicationSecret: string;
  /** The fetch to use (default the platform's `globalThis.fetch`): a proxy agent, instrumentation, a test double. */
  fetch?: typeof fetch;
  /** Changes to the retry policy (see `RetryPolicy` for the defaults). */
  retry?: Partial<RetryPolicy>;
}

/** Options every call takes. */
export interface CallOptions {
  /** Cancels the call, including its waits between retries and for a token. */
  signal?: AbortSignal;
}

/** Options of calls that send a POST: the `Idempotency-Key` to use instead of a generated one. */
export interface PostOptions extends CallOptions {
  /** Send your own key to make retries across your own restarts safe too (1..255 visible ASCII characters). */
  idempotencyKey?: string;
}

/** Options of conditional writes: only if the resource still has this `ETag`, else 412 `PreconditionFailed`. */
export interface ConditionalOptions extends CallOptions {
  ifMatch?: string;
}

export interface ApiRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, unknown>;
  body?: unknown;
  signal?: AbortSignal;
  idempotencyKey?: string;
  ifMatch?: string;
  /** The media type asked for (default `application/json`); the answer is parsed as JSON either way. */
  accept?: string;
  /** False for the token request itself. */
  authenticated?: boolean;
}

export interface ApiResponse<T> {
  status: number;
  headers: Headers;
  /** The parsed JSON body; undefined for 204 and for bodies that are empty. */
  body: T;
}

/** Statuses that mean "not done, try again": the request was refused before it ran, or its outcome is unknown. */
const RETRIED_STATUSES = new Set([429, 500, 502, 503, 504]);

/**
 * Sends API requests: the bearer token, JSON bodies, an `Idempotency-Key` on every POST (the same one on
 * each retry), and the retry rules of the API's client guidance.
 *
 * Which requests are retried: on 429 and 503 every request (the API refused it before it ran; `Retry-After`
 * is honoured), on 500, 502, 504 and network errors every request too, because each is safe to repeat:
 * GET and PUT by their nature, DELETE (a repeat finds the resource gone, which the client reports as
 * success, see below), POST because of its idempotency key (a repeat replays the first answer), and PATCH
 * because this API's PATCH replaces the fields it names (applying it twice leaves what applying it once
 * does; with `If-Match` a repeat can only find the version it itself made, and is 412). A 409
 * `IdempotencyKeyInUse` (the first attempt of the same POST is still running) is waited out the same way.
 */
export class Transport {
  private readonly fetchImpl: typeof fetch;
  private readonly policy: RetryPolicy;
  private readonly baseUrl: string;
  readonly tokens: TokenCache;

  constructor(private readonly options: TrackingClientOptions) {
    if (!options.baseUrl) throw new TypeError('TrackingClient: baseUrl is required');
    for (const name of ['tenantId', 'applicationId', 'applicationSecret'] as const) {
      if (typeof options[name] !== 'string' || options[name] === '') throw new TypeError(`TrackingClient: ${name} is required`);
    }
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== 'function') throw new TypeError('TrackingClient: no fetch on this platform; pass options.fetch');
    this.fetchImpl = fetchImpl;
    this.policy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    if (!Number.isInteger(this.policy.maxAttempts) || this.policy.maxAttempts < 1) {
      throw new TypeError('TrackingClient: retry.maxAttempts must be an integer >= 1');
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.tokens = new TokenCache(() => this.issueToken());
  }

  async request<T>(request: ApiRequest): Promise<ApiResponse<T>> {
    const authenticated = request.authenticated ?? true;
    const { signal } = request;
    const url = this.url(request.path, request.query);
    const headers: Record<string, string> = { accept: request.accept ?? 'application/json' };
    let body: string | undefined;
    if (request.body !== undefined) {
      body = JSON.stringify(request.body);
      headers['content-type'] = 'application/json';
    }
    if (request.ifMatch !== undefined) headers['if-match'] = request.ifMatch;
    if (request.method === 'POST' && authenticated) headers['idempotency-key'] = request.idempotencyKey ?? globalThis.crypto.randomUUID();

    let refreshedAfter401 = false;
    let outcomeUnknown = false;
    for (let attempt = 1; ; attempt++) {
      signal?.throwIfAborted();
      let token: string | undefined;
      if (authenticated) {
        token = await this.tokens.get(signal);
        headers.authorization = `Bearer ${token}`;
      }
      let response: Response;
      try {
        response = await this.fetchImpl(url, { method: request.method, headers, body, signal });
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        if (attempt >= this.policy.maxAttempts) throw error;
        outcomeUnknown = true;
        await sleep(backoffDelay(this.policy, attempt - 1), signal);
        continue;
      }
      const text = await abortable(response.text(), signal);
      if (response.ok) return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : undefined) as T };

      const retryAfterMs = parseRetryAfter(response.headers.get('retry-after'));
      const error = TrackingApiError.fromBody(response.status, response.headers, text, retryAfterMs);
      if (error.status === 401 && token !== undefined && !refreshedAfter401) {
        // The guidance: on a 401, get a new token and retry the failed call once.
        refreshedAfter401 = true;
        this.tokens.invalidate(token);
        attempt--;
        continue;
      }
      if (error.status === 404 && request.method === 'DELETE' && outcomeUnknown) {
        // An earlier attempt whose answer was lost deleted it: what the caller asked for holds.
        return { status: 204, headers: response.headers, body: undefined as T };
      }
      const retried = RETRIED_STATUSES.has(error.status) || (error.status === 409 && error.code === 'IdempotencyKeyInUse');
      if (!retried || attempt >= this.policy.maxAttempts) throw error;
      if (retryAfterMs !== undefined && retryAfterMs > this.policy.maxRetryAfterMs) throw error;
      // A proxy may answer 5xx after the service committed, so any 5xx leaves the outcome open.
      if (error.status >= 500) outcomeUnknown = true;
      const delay = retryAfterMs === undefined ? backoffDelay(this.policy, attempt - 1) : retryAfterDelay(this.policy, retryAfterMs);
      await sleep(delay, signal);
    }
  }

  private async issueToken(): Promise<TokenResponse> {
    const { tenantId, applicationId, applicationSecret } = this.options;
    const { body } = await this.request<TokenResponse>({
      method: 'POST',
      path: '/v1/applications/token',
      body: { tenantId, applicationId, applicationSecret },
      authenticated: false,
    });
    if (typeof body?.accessToken !== 'string' || typeof body.expiresIn !== 'number') {
      throw new TrackingApiError({ status: 200, code: 'InvalidTokenResponse', message: 'The token endpoint answered without accessToken and expiresIn' });
    }
    return body;
  }

  private url(path: string, query: Record<string, unknown> | undefined): string {
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(query ?? {})) {
      if (value === undefined || value === null) continue;
      url.searchParams.set(name, Array.isArray(value) ? value.join(',') : String(value));
    }
    return url.toString();
  }
}
