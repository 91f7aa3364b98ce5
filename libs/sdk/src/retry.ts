/** How the client retries. Every field has a default; pass only what you change. */
export interface RetryPolicy {
  /** Attempts in all, the first one included (default 5); 1 turns retries off. */
  maxAttempts: number;
  /** Backoff cap of the first retry in ms (default 250): retry n waits a random time in [0, min(max, base * 2^n)). */
  baseDelayMs: number;
  /** Longest backoff in ms (default 20000). */
  maxDelayMs: number;
  /** Longest `Retry-After` the client waits for, in ms (default 60000); an answer asking for more is thrown at once. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = Object.freeze({
  maxAttempts: 5,
  baseDelayMs: 250,
  maxDelayMs: 20000,
  maxRetryAfterMs: 60000,
});

/** Exponential backoff with full jitter (https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/). */
export function backoffDelay(policy: RetryPolicy, retry: number, random: () => number = Math.random): number {
  const cap = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry);
  return Math.floor(random() * cap);
}

/**
 * The wait before retrying an answer that said `Retry-After`: that long, plus full jitter over one more
 * such interval (at least `baseDelayMs`, at most `maxDelayMs`). Clients refused together (a burst of
 * token requests, a restart) then come back spread out instead of all at the instant the API named,
 * where they would collide again.
 */
export function retryAfterDelay(policy: RetryPolicy, retryAfterMs: number, random: () => number = Math.random): number {
  const spread = Math.min(policy.maxDelayMs, Math.max(policy.baseDelayMs, retryAfterMs));
  return retryAfterMs + Math.floor(random() * spread);
}

/** An HTTP-date in its preferred form (IMF-fixdate), `Sun, 06 Nov 1994 08:49:37 GMT`. */
const IMF_FIXDATE = /^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$/;

/** `Retry-After` in ms: delay-seconds or an HTTP-date (RFC 9110 section 10.2.3); undefined when absent or unreadable. */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  if (!IMF_FIXDATE.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** `promise`, or the signal's reason as soon as it aborts (the promise itself keeps running for others). */
export function abortable<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
