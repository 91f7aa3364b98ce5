import type { EventType } from '../events/events.js';
import type { AccountScope, PageRequest } from '../paging.js';
import type { Conditional } from './common.js';

export enum WebhookStatus {
  Active = 'Active',
  Disabled = 'Disabled',
}

export enum DeliveryStatus {
  Pending = 'Pending',
  Succeeded = 'Succeeded',
  Failed = 'Failed',
}

/** At most this many webhooks per account (409 WebhookLimitReached). */
export const MAX_WEBHOOKS_PER_ACCOUNT = 20;

/** How long a rotated-out secret keeps signing beside the new one. */
export const PREVIOUS_SECRET_OVERLAP_MS = 24 * 60 * 60 * 1000;

/** `["*"]`: every event type. */
export const ALL_EVENT_TYPES = '*';

/** A webhook as every answer shows it: never its secret. */
export interface Webhook {
  id: string;
  url: string;
  description: string | null;
  eventTypes: (EventType | typeof ALL_EVENT_TYPES)[];
  status: WebhookStatus;
  disabledReason: string | null;
  createdAt: string;
  updatedAt: string;
}

/** The answers to create and rotate-secret: the only ones that carry the secret. */
export interface WebhookWithSecret extends Webhook {
  secret: string;
}

export interface WebhookInput {
  url: string;
  description?: string | null;
  eventTypes: (EventType | typeof ALL_EVENT_TYPES)[];
}

export type WebhookPatch = Partial<WebhookInput>;

/**
 * A webhook URL as shown to anyone but the account's Admins and Operators, and in every event: without
 * user name and password, query and fragment, where credentials ride (`?token=...`). Scheme, host, port
 * and path stay, so the receiver is still recognisable. A URL that does not parse (none is stored) shows
 * as its scheme alone.
 */
export function redactWebhookUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return /^[a-z][a-z0-9+.-]*:/i.exec(url)?.[0] ?? '';
  }
  return `${parsed.protocol}//${parsed.host}${parsed.pathname}`;
}

/** The webhook with its URL redacted (`redactWebhookUrl`): what Viewers and the event feed see. */
export function redactWebhook<W extends { url: string }>(webhook: W): W {
  return { ...webhook, url: redactWebhookUrl(webhook.url) };
}

/** One attempt at sending a delivery, as the delivery log shows it. */
export interface DeliveryAttempt {
  at: string;
  statusCode: number | null;
  durationMs: number;
  error: string | null;
}

export interface Delivery {
  id: string;
  eventId: string;
  eventType: EventType;
  status: DeliveryStatus;
  /** The last attempts (at most 20), oldest first. */
  attempts: DeliveryAttempt[];
  /** Every attempt ever made, also those `attempts` no longer holds. */
  attemptsTotal: number;
  nextAttemptAt: string | null;
}

export interface ListWebhooksRequest extends AccountScope {
  page: PageRequest;
}
export interface CreateWebhookRequest extends AccountScope {
  webhook: WebhookInput;
}
export interface WebhookRequest extends AccountScope {
  webhookId: string;
}
export interface UpdateWebhookRequest extends WebhookRequest, Conditional {
  patch: WebhookPatch;
}
export interface DeleteWebhookRequest extends WebhookRequest, Conditional {}
export interface ListDeliveriesRequest extends WebhookRequest {
  page: PageRequest;
}
export interface DeliveryRequest extends WebhookRequest {
  deliveryId: string;
}
