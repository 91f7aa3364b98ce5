export { TrackingClient } from './client.js';
export type { TrackingClientOptions, CallOptions, PostOptions, ConditionalOptions } from './transport.js';
export { TrackingApiError, OperationWaitTimeoutError } from './errors.js';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.js';
export { etagOf, type ActionResult } from './etag.js';
export { Listing, type Page, type PageQuery } from './paging.js';
export {
  Account,
  Alerts,
  Devices,
  Events,
  Items,
  Operations,
  PointsOfInterest,
  Readings,
  Sets,
  ShareLinks,
  Shipments,
  Webhooks,
  type WaitOptions,
} from './account.js';
export { verifyWebhook, WebhookVerificationError, type WebhookHeaders } from './webhook-verification.js';
export type * from './types.js';
