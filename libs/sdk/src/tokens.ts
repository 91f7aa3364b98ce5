import { abortable } from './retry.js';

/** The answer of `POST /v1/applications/token`. */
export interface TokenResponse {
  accessToken: string;
  expiresIn: number;
}

/** Part of a token's life after which it is replaced: 23 h of a 24 h token, as the API's client guidance says. */
const REFRESH_AT_FRACTION = 23 / 24;

/**
 * One access token per client, shared by every call: the first call asks for it and concurrent calls wait
 * for that same request; it is replaced after 23/24 of its life, or when the API refuses it (401).
 */
export class TokenCache {
  private current: { token: string; refreshAt: number } | undefined;
  private pending: Promise<string> | undefined;

  constructor(private readonly issue: () => Promise<TokenResponse>) {}

  /** A usable token: the cached one, else the one being fetched, else a new request. */
  get(signal?: AbortSignal): Promise<string> {
    if (this.current && Date.now() < this.current.refreshAt) return Promise.resolve(this.current.token);
    return abortable(this.fetch(), signal);
  }

  /**
   * Forgets `token` after the API refused it. Only that token: when several calls get 401 with it, the
   * first one's refresh serves all of them.
   */
  invalidate(token: string): void {
    if (this.current?.token === token) this.current = undefined;
  }

  private fetch(): Promise<string> {
    // Not bound to any caller's signal: one caller giving up must not fail the others that wait for it.
    this.pending ??= (async () => {
      try {
        const obtainedAt = Date.now();
        const { accessToken, expiresIn } = await this.issue();
        this.current = { token: accessToken, refreshAt: obtainedAt + expiresIn * 1000 * REFRESH_AT_FRACTION };
        return accessToken;
      } finally {
        this.pending = undefined;
      }
    })();
    return this.pending;
  }
}
