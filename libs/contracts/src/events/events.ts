import type { AlertKind } from '../oms/alerts.js';
import type { ItemPage } from '../oms/common.js';
import type { ShipmentEta } from '../oms/shipments.js';
import type { AccountScope, PageRequest } from '../paging.js';

/**
 * The events every change produces (docs/events.md). A service writes each event into its outbox in the
 * transaction of the change; the relay publishes it on JetStream with the event id as `Nats-Msg-Id`;
 * the OMS keeps the account's feed (`GET /events`) and delivers the same events, with the same ids, to webhooks.
 */
export enum EventType {
  ShipmentCreated = 'shipment.created',
  ShipmentUpdated = 'shipment.updated',
  ShipmentStarted = 'shipment.started',
  ShipmentDelivered = 'shipment.delivered',
  ShipmentCompleted = 'shipment.completed',
  ShipmentCancelled = 'shipment.cancelled',
  ShipmentDeleted = 'shipment.deleted',
  ShipmentArrived = 'shipment.arrived',
  ShipmentDeparted = 'shipment.departed',
  /** The shipment's `eta.arrivalAt` moved by more than max(10 min, 10 % of the remaining time) from the value last published. */
  ShipmentEtaChanged = 'shipment.eta_changed',
  DeviceCreated = 'device.created',
  DeviceUpdated = 'device.updated',
  DeviceRetired = 'device.retired',
  DeviceDeleted = 'device.deleted',
  DeviceAssigned = 'device.assigned',
  DeviceUnassigned = 'device.unassigned',
  AlertOpened = 'alert.opened',
  AlertClosed = 'alert.closed',
  AlertAcknowledged = 'alert.acknowledged',
  /** A shipment opened its hourly allowance of alerts and the evaluation decided one more: once per shipment and clock hour. */
  AlertSuppressed = 'alert.suppressed',
  OperationFinished = 'operation.finished',
  WebhookDisabled = 'webhook.disabled',
  WebhookTest = 'webhook.test',
}

export const EVENT_TYPES: readonly EventType[] = Object.values(EventType);

/**
 * One event as the feed shows it and a webhook receives it (the delivery body is exactly this JSON).
 * `id` is a UUIDv7; `occurredAt` is when the change was recorded (RFC 3339 UTC, milliseconds).
 */
export interface TrackingEvent<D = unknown> {
  id: string;
  type: EventType;
  occurredAt: string;
  accountId: string;
  data: D;
}

/** `device.assigned` and `device.unassigned`. */
export interface DeviceLinkData {
  deviceId: string;
  shipmentId: string;
  setId: string | null;
}

/**
 * `alert.suppressed`: the shipment opened its allowance of alerts for the clock hour
 * (`ALERTS_PER_SHIPMENT_PER_HOUR`) and the evaluation decided one more, the first alert not opened (its
 * device, null for a shipment-wide alert, and kind); no further alert of the shipment opens before `until`,
 * the end of that hour. One per shipment and hour: later suppressed alerts of the hour have no event.
 */
export interface AlertSuppressedData {
  shipmentId: string;
  deviceId: string | null;
  kind: AlertKind;
  until: string;
}

/** `shipment.eta_changed`: the new estimate and the arrival last published before it (null: none). */
export interface EtaChangedData {
  shipmentId: string;
  eta: ShipmentEta;
  previousArrivalAt: string | null;
}

/** `shipment.arrived` and `shipment.departed`. */
export interface VisitEventData {
  shipmentId: string;
  poiId: string;
  arrivedAt: string;
  departedAt: string | null;
}

/**
 * JetStream naming. Every name derives from `NATS_SUBJECT_PREFIX`, so that parallel runs (tests,
 * benchmarks) on one NATS server never share a stream or a durable consumer.
 *
 * Events are published on `<prefix>events.<tenantId>.<accountId>.<type>`, into the stream
 * `<PREFIX>EVENTS` (the prefix's dots turned into underscores).
 */
export const EventSubjects = {
  /** The subject one event is published on. */
  of: (prefix: string, tenantId: string, accountId: string, type: EventType): string => `${prefix}events.${tenantId}.${accountId}.${type}`,
  /** Every event subject, for the stream's subject filter. */
  all: (prefix: string): string => `${prefix}events.>`,
};

/** A JetStream stream or consumer name from the subject prefix: `test.abc.` + `EVENTS` -> `test_abc_EVENTS`. */
export function jetStreamName(prefix: string, name: string): string {
  return `${prefix.replace(/[^A-Za-z0-9_-]/g, '_')}${name}`;
}

/**
 * What travels on the events stream: the event exactly as clients see it, and the tenant it belongs to
 * (which clients never see, but every consumer needs to scope what it stores).
 */
export interface EventEnvelope {
  tenantId: string;
  event: TrackingEvent;
}

/** The filters of `GET /events`. */
export interface EventFilters {
  /** Any of these types. */
  type?: EventType[];
  /** Start right after this event (its id); exclusive with the page's cursor. */
  after?: string;
}

export interface ListEventsRequest extends AccountScope {
  page: PageRequest;
  filters: EventFilters;
}

export type EventPage = ItemPage<TrackingEvent>;
