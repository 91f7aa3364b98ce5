import { Account } from './account.js';
import { Listing, type PageQuery } from './paging.js';
import { type CallOptions, Transport, type TrackingClientOptions } from './transport.js';
import type { AccountSummary, PublicTracking } from './types.js';

/**
 * The Tracking API client. One per application credentials: it holds the access token that all its calls
 * share (one token request, however many calls start at once), refreshed after 23 of its 24 hours or
 * when the API refuses it; it retries what is safe to retry with backoff and `Retry-After`, and gives
 * every POST an `Idempotency-Key`.
 *
 * ```ts
 * const client = new TrackingClient({ baseUrl, tenantId, applicationId, applicationSecret });
 * const shipment = await client.account(accountId).shipments.create({ name: 'Rotterdam to Lyon' });
 * ```
 */
export class TrackingClient {
  private readonly transport: Transport;

  constructor(options: TrackingClientOptions) {
    this.transport = new Transport(options);
  }

  /** The resource groups of one account (shipments, sets, items, devices, ...). Cheap: no request. */
  account(accountId: string): Account {
    return new Account(this.transport, accountId);
  }

  /**
   * The accounts of the application's tenant that it holds a role on (`GET /v1/accounts`), oldest first,
   * each with the strongest role the application has there.
   */
  accounts(query: PageQuery = {}, options: CallOptions = {}): Listing<AccountSummary> {
    return new Listing<AccountSummary>(
      async (pageQuery, callOptions) =>
        (await this.transport.request<Record<string, unknown>>({ method: 'GET', path: '/v1/accounts', query: pageQuery, ...callOptions })).body,
      'items',
      query as Record<string, unknown>,
      options,
    );
  }

  /**
   * What a share link shows (`GET /v1/public/tracking/{token}`), read without credentials: `token` is the
   * last path segment of the link's `url`. An unknown, expired or revoked link is 404 `ShareLinkNotExists`.
   */
  async publicTracking(token: string, options: CallOptions = {}): Promise<PublicTracking> {
    const response = await this.transport.request<PublicTracking>({
      method: 'GET',
      path: `/v1/public/tracking/${encodeURIComponent(token)}`,
      authenticated: false,
      ...options,
    });
    return response.body;
  }
}
