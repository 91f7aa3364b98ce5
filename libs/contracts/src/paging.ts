/** What every collection request carries once the gateway has parsed the query string. */
export interface PageRequest {
  cursor?: string;
  limit: number;
  includeTotal: boolean;
}

export interface PageMetadata {
  nextCursor: string | null;
  total?: number;
}

/** The scope every account-level call runs in; the gateway has checked both ids before forwarding. */
export interface AccountScope {
  tenantId: string;
  accountId: string;
}

export const DEFAULT_PAGE_LIMIT = 50;
export const MAX_PAGE_LIMIT = 100;
