import { OperationWaitTimeoutError } from './errors.js';
import { type ActionResult, withETag } from './etag.js';
import { Listing, type PageQuery } from './paging.js';
import { parseRetryAfter, sleep } from './retry.js';
import type { ApiRequest, CallOptions, ConditionalOptions, PostOptions, Transport } from './transport.js';
import type * as T from './types.js';

const e = encodeURIComponent;
/** Operation statuses after which nothing changes any more. */
const FINISHED: readonly string[] = ['Succeeded', 'PartiallySucceeded', 'Failed', 'Cancelled'];
/** Poll interval of `operations.wait` when the API sends no `Retry-After`. */
const DEFAULT_POLL_MS = 1000;

/** Calls of one account, shared by its resource groups. */
class AccountCalls {
  constructor(
    private readonly transport: Transport,
    readonly base: string,
  ) {}

  async json<R>(method: ApiRequest['method'], path: string, body?: unknown, options: PostOptions & ConditionalOptions = {}): Promise<R> {
    const response = await this.transport.request<R>({ method, path: this.base + path, body, ...options });
    return withETag(response.body, response.headers);
  }

  async action(method: ApiRequest['method'], path: string, options: PostOptions & ConditionalOptions = {}): Promise<ActionResult> {
    const response = await this.transport.request<undefined>({ method, path: this.base + path, ...options });
    return { etag: response.headers.get('etag') ?? undefined };
  }

  async response<R>(path: string, query: Record<string, unknown>, options: CallOptions, accept?: string) {
    return this.transport.request<R>({ method: 'GET', path: this.base + path, query, accept, ...options });
  }

  list<R>(path: string, key: string, query: object = {}, options: CallOptions = {}): Listing<R> {
    return new Listing<R>(
      async (pageQuery, callOptions) => (await this.response<Record<string, unknown>>(path, pageQuery, callOptions)).body,
      key,
      query as Record<string, unknown>,
      options,
    );
  }
}

/** The create/get/update/delete/list of one resource kind at `path`. */
class Crud<Resource, Create, Update, Filters = object> {
  constructor(
    protected readonly calls: AccountCalls,
    private readonly path: string,
    private readonly key = 'items',
  ) {}

  create(body: Create, options?: PostOptions): Promise<Resource> {
    return this.calls.json('POST', this.path, body, options);
  }

  get(id: string, options?: CallOptions): Promise<Resource> {
    return this.calls.json('GET', `${this.path}/${e(id)}`, undefined, options);
  }

  /** PATCH: replaces the fields `patch` names. With `ifMatch`, only if nobody changed it since (else 412). */
  update(id: string, patch: Update, options?: ConditionalOptions): Promise<Resource> {
    return this.calls.json('PATCH', `${this.path}/${e(id)}`, patch, options);
  }

  async delete(id: string, options?: ConditionalOptions): Promise<void> {
    await this.calls.action('DELETE', `${this.path}/${e(id)}`, options);
  }

  /** Every record, oldest first, fetched page by page as the loop asks for more. */
  list(query?: Filters & PageQuery, options?: CallOptions): Listing<Resource> {
    return this.calls.list(this.path, this.key, query, options);
  }
}

export class Shipments extends Crud<T.Shipment, T.CreateShipment, T.UpdateShipment, T.ShipmentFilters> {
  constructor(calls: AccountCalls) {
    super(calls, '/shipments');
  }

  /** Planned -> InTransit. */
  start(id: string, options?: PostOptions & ConditionalOptions): Promise<ActionResult> {
    return this.calls.action('POST', `/shipments/${e(id)}/start`, options);
  }

  /** InTransit -> Delivered. */
  deliver(id: string, options?: PostOptions & ConditionalOptions): Promise<ActionResult> {
    return this.calls.action('POST', `/shipments/${e(id)}/deliver`, options);
  }

  /** Delivered -> Completed; releases the shipment's devices. */
  complete(id: string, options?: PostOptions & ConditionalOptions): Promise<ActionResult> {
    return this.calls.action('POST', `/shipments/${e(id)}/complete`, options);
  }

  /** Planned or InTransit -> Cancelled; releases the shipment's devices. */
  cancel(id: string, options?: PostOptions & ConditionalOptions): Promise<ActionResult> {
    return this.calls.action('POST', `/shipments/${e(id)}/cancel`, options);
  }

  /** The devices assigned to the shipment's sets. */
  devices(id: string, query?: PageQuery, options?: CallOptions): Listing<T.Device> {
    return this.calls.list(`/shipments/${e(id)}/devices`, 'devices', query, options);
  }

  /** The positions of the shipment's devices while assigned to it (not paged). */
  async track(id: string, query?: T.TrackFilters, options?: CallOptions): Promise<T.Track> {
    return (await this.calls.response<T.Track>(`/shipments/${e(id)}/track`, { ...query }, options ?? {})).body;
  }

  /**
   * The same track as an RFC 7946 GeoJSON `FeatureCollection`, ready for a map: one `Feature` per device,
   * a `LineString` of `[lng, lat]` (a `Point` for a device with one position), with `deviceId` and the
   * `recordedAt` and `accuracyMeters` of each position in its `properties`. The API builds it
   * (`Accept: application/geo+json`), from the same points as `track` with the same filters.
   */
  async trackGeoJson(id: string, query?: T.TrackFilters, options?: CallOptions): Promise<T.TrackGeoJson> {
    return (await this.calls.response<T.TrackGeoJson>(`/shipments/${e(id)}/track`, { ...query }, options ?? {}, 'application/geo+json')).body;
  }

  /** The shipment's visits to points of interest. */
  visits(id: string, query?: PageQuery, options?: CallOptions): Listing<T.Visit> {
    return this.calls.list(`/shipments/${e(id)}/visits`, 'items', query, options);
  }
}

/**
 * Share links of shipments: expiring links that show one shipment to someone without an account. Only
 * `create` answers the link's `url` (its token is kept as a digest); `list` shows ids and expiries.
 */
export class ShareLinks {
  constructor(private readonly calls: AccountCalls) {}

  /** A new link; `expiresAt` at most 30 days ahead, default 7 days. Keep `url`: it cannot be shown again. */
  create(shipmentId: string, body: T.CreateShareLink = {}, options?: PostOptions): Promise<T.CreatedShareLink> {
    return this.calls.json('POST', `/shipments/${e(shipmentId)}/share-links`, body, options);
  }

  /** The shipment's links, expired and revoked ones included, oldest first. */
  list(shipmentId: string, query?: PageQuery, options?: CallOptions): Listing<T.ShareLink> {
    return this.calls.list(`/shipments/${e(shipmentId)}/share-links`, 'items', query, options);
  }

  /** Revokes the link at once (again: nothing changes). */
  async revoke(shipmentId: string, linkId: string, options?: CallOptions): Promise<void> {
    await this.calls.action('DELETE', `/shipments/${e(shipmentId)}/share-links/${e(linkId)}`, options);
  }
}

export class Sets {
  constructor(private readonly calls: AccountCalls) {}

  create(shipmentId: string, body: T.CreateSet, options?: PostOptions): Promise<T.ShipmentSet> {
    return this.calls.json('POST', `/shipments/${e(shipmentId)}/sets`, body, options);
  }

  get(shipmentId: string, setId: string, options?: CallOptions): Promise<T.ShipmentSet> {
    return this.calls.json('GET', `/shipments/${e(shipmentId)}/sets/${e(setId)}`, undefined, options);
  }

  update(shipmentId: string, setId: string, patch: T.UpdateSet, options?: ConditionalOptions): Promise<T.ShipmentSet> {
    return this.calls.json('PATCH', `/shipments/${e(shipmentId)}/sets/${e(setId)}`, patch, options);
  }

  async delete(shipmentId: string, setId: string, options?: ConditionalOptions): Promise<void> {
    await this.calls.action('DELETE', `/shipments/${e(shipmentId)}/sets/${e(setId)}`, options);
  }

  list(shipmentId: string, query?: PageQuery, options?: CallOptions): Listing<T.ShipmentSet> {
    return this.calls.list(`/shipments/${e(shipmentId)}/sets`, 'items', query, options);
  }

  /** Assigns a device to the set (idempotent; moves it from another set of the same shipment). */
  async assignDevice(shipmentId: string, setId: string, deviceId: string, options?: CallOptions): Promise<void> {
    await this.calls.action('PUT', `/shipments/${e(shipmentId)}/sets/${e(setId)}/devices/${e(deviceId)}`, options);
  }

  async unassignDevice(shipmentId: string, setId: string, deviceId: string, options?: CallOptions): Promise<void> {
    await this.calls.action('DELETE', `/shipments/${e(shipmentId)}/sets/${e(setId)}/devices/${e(deviceId)}`, options);
  }

  /** Records a bulk assignment (1..10000 entries) and answers its operation; see `operations.wait`. */
  bulkAssign(assignments: T.BulkAssignment[], options?: PostOptions): Promise<T.Operation> {
    return this.calls.json('POST', '/sets/bulk-assign', { assignments }, options);
  }
}

export class Items {
  constructor(private readonly calls: AccountCalls) {}

  private path(shipmentId: string, setId: string): string {
    return `/shipments/${e(shipmentId)}/sets/${e(setId)}/items`;
  }

  create(shipmentId: string, setId: string, body: T.CreateItem, options?: PostOptions): Promise<T.Item> {
    return this.calls.json('POST', this.path(shipmentId, setId), body, options);
  }

  get(shipmentId: string, setId: string, itemId: string, options?: CallOptions): Promise<T.Item> {
    return this.calls.json('GET', `${this.path(shipmentId, setId)}/${e(itemId)}`, undefined, options);
  }

  update(shipmentId: string, setId: string, itemId: string, patch: T.UpdateItem, options?: ConditionalOptions): Promise<T.Item> {
    return this.calls.json('PATCH', `${this.path(shipmentId, setId)}/${e(itemId)}`, patch, options);
  }

  async delete(shipmentId: string, setId: string, itemId: string, options?: ConditionalOptions): Promise<void> {
    await this.calls.action('DELETE', `${this.path(shipmentId, setId)}/${e(itemId)}`, options);
  }

  list(shipmentId: string, setId: string, query?: PageQuery, options?: CallOptions): Listing<T.Item> {
    return this.calls.list(this.path(shipmentId, setId), 'items', query, options);
  }
}

export class PointsOfInterest extends Crud<T.PointOfInterest, T.CreatePointOfInterest, T.UpdatePointOfInterest> {
  constructor(calls: AccountCalls) {
    super(calls, '/points-of-interest');
  }
}

export class Devices extends Crud<T.Device, T.CreateDevice, T.UpdateDevice, T.DeviceFilters> {
  constructor(calls: AccountCalls) {
    super(calls, '/devices', 'devices');
  }

  /** `Retired` is final; an assigned device is 409 `DeviceAssigned`. */
  retire(id: string, options?: PostOptions & ConditionalOptions): Promise<ActionResult> {
    return this.calls.action('POST', `/devices/${e(id)}/retire`, options);
  }

  /** Records a bulk retire (1..10000 device ids) and answers its operation; see `operations.wait`. */
  bulkRetire(deviceIds: string[], options?: PostOptions): Promise<T.Operation> {
    return this.calls.json('POST', '/devices/bulk-retire', { deviceIds }, options);
  }

  /**
   * A credential a tracker proves itself with to the device gateway (`Mqtt`, `Http`: the answer's `secret`,
   * shown only here; `Teltonika`: the IMEI as `identifier`, no secret).
   */
  createCredential(deviceId: string, body: T.CreateCredential, options?: PostOptions): Promise<T.CredentialWithSecret> {
    return this.calls.json('POST', `/devices/${e(deviceId)}/credentials`, body, options);
  }

  /** The device's credentials, never a secret. */
  credentials(deviceId: string, query?: PageQuery, options?: CallOptions): Listing<T.Credential> {
    return this.calls.list(`/devices/${e(deviceId)}/credentials`, 'credentials', query, options);
  }

  /** Refuses the credential at once; connections that used it are closed within a minute. */
  async deleteCredential(deviceId: string, credentialId: string, options?: ConditionalOptions): Promise<void> {
    await this.calls.action('DELETE', `/devices/${e(deviceId)}/credentials/${e(credentialId)}`, options);
  }
}

export interface WaitOptions extends CallOptions {
  /** Give up (with `OperationWaitTimeoutError`) after this long; default: wait as long as it takes. */
  timeoutMs?: number;
}

export class Operations {
  constructor(private readonly calls: AccountCalls) {}

  get(id: string, options?: CallOptions): Promise<T.Operation> {
    return this.calls.json('GET', `/operations/${e(id)}`, undefined, options);
  }

  list(query?: T.OperationFilters & PageQuery, options?: CallOptions): Listing<T.Operation> {
    return this.calls.list('/operations', 'items', query, options);
  }

  /** The processed entries, in request order (`index` from 0). */
  results(id: string, query?: T.OperationResultFilters & PageQuery, options?: CallOptions): Listing<T.OperationResult> {
    return this.calls.list(`/operations/${e(id)}/results`, 'items', query, options);
  }

  /** Cancels an unfinished operation; a finished one is 409 `OperationFinished`. */
  async cancel(id: string, options?: PostOptions): Promise<void> {
    await this.calls.action('POST', `/operations/${e(id)}/cancel`, options);
  }

  /**
   * Polls the operation until it is finished (Succeeded, PartiallySucceeded, Failed or Cancelled) and
   * answers it. Waits between polls as the API's `Retry-After` says (1 s while it runs).
   */
  async wait(id: string, options: WaitOptions = {}): Promise<T.Operation> {
    const { timeoutMs } = options;
    const deadline = timeoutMs === undefined ? Infinity : Date.now() + timeoutMs;
    // The deadline also ends a poll in flight (and its retries), not only the waits between polls.
    const timeout = timeoutMs === undefined ? undefined : AbortSignal.timeout(timeoutMs);
    const signal = timeout && options.signal ? AbortSignal.any([options.signal, timeout]) : (timeout ?? options.signal);
    let operation: T.Operation | undefined;
    try {
      for (;;) {
        const response = await this.calls.response<T.Operation>(`/operations/${e(id)}`, {}, { signal });
        operation = withETag(response.body, response.headers);
        if (FINISHED.includes(operation.status)) return operation;
        const delay = parseRetryAfter(response.headers.get('retry-after')) ?? DEFAULT_POLL_MS;
        if (deadline - Date.now() <= 0) throw new OperationWaitTimeoutError(operation, timeoutMs ?? 0);
        await sleep(delay, signal);
      }
    } catch (error) {
      if (timeout?.aborted && !options.signal?.aborted) throw new OperationWaitTimeoutError(operation, timeoutMs ?? 0);
      throw error;
    }
  }
}

export class Readings {
  constructor(private readonly calls: AccountCalls) {}

  /**
   * Sends a batch of 1..5000 readings. Each is judged on its own (`rejected` lists the refused ones); a
   * reading sent again is counted in `duplicates`, so a batch can be resent after a timeout.
   */
  create(readings: T.ReadingInput[], options?: PostOptions): Promise<T.IngestResult> {
    return this.calls.json('POST', '/readings', { readings }, options);
  }

  /** A device's readings, in the order they were stored; `from`/`to` filter on `recordedAt` (half-open). */
  list(deviceId: string, query?: T.ReadingFilters & PageQuery, options?: CallOptions): Listing<T.Reading> {
    return this.calls.list(`/devices/${e(deviceId)}/readings`, 'readings', query, options);
  }
}

export class Alerts {
  constructor(private readonly calls: AccountCalls) {}

  get(id: string, options?: CallOptions): Promise<T.Alert> {
    return this.calls.json('GET', `/alerts/${e(id)}`, undefined, options);
  }

  list(query?: T.AlertFilters & PageQuery, options?: CallOptions): Listing<T.Alert> {
    return this.calls.list('/alerts', 'items', query, options);
  }

  /** Acknowledges the alert; again is harmless (the first `acknowledgedAt` stays). */
  async acknowledge(id: string, options?: PostOptions): Promise<void> {
    await this.calls.action('POST', `/alerts/${e(id)}/acknowledge`, options);
  }
}

export class Events {
  constructor(private readonly calls: AccountCalls) {}

  /** The account's events in the order they were recorded; `after` starts right after an event id. */
  list(query?: T.EventFilters & PageQuery, options?: CallOptions): Listing<T.TrackingEvent> {
    return this.calls.list('/events', 'items', query, options);
  }
}

export class Webhooks {
  constructor(private readonly calls: AccountCalls) {}

  /** Creates a webhook; the answer carries its signing `secret`, shown only here and by `rotateSecret`. */
  create(body: T.CreateWebhook, options?: PostOptions): Promise<T.WebhookWithSecret> {
    return this.calls.json('POST', '/webhooks', body, options);
  }

  get(id: string, options?: CallOptions): Promise<T.Webhook> {
    return this.calls.json('GET', `/webhooks/${e(id)}`, undefined, options);
  }

  update(id: string, patch: T.UpdateWebhook, options?: ConditionalOptions): Promise<T.Webhook> {
    return this.calls.json('PATCH', `/webhooks/${e(id)}`, patch, options);
  }

  async delete(id: string, options?: ConditionalOptions): Promise<void> {
    await this.calls.action('DELETE', `/webhooks/${e(id)}`, options);
  }

  list(query?: PageQuery, options?: CallOptions): Listing<T.Webhook> {
    return this.calls.list('/webhooks', 'items', query, options);
  }

  /** A new secret; the old one keeps signing beside it for 24 h. */
  rotateSecret(id: string, options?: PostOptions): Promise<T.WebhookWithSecret> {
    return this.calls.json('POST', `/webhooks/${e(id)}/rotate-secret`, undefined, options);
  }

  async enable(id: string, options?: PostOptions): Promise<void> {
    await this.calls.action('POST', `/webhooks/${e(id)}/enable`, options);
  }

  /** Sends a `webhook.test` event; answers its delivery. */
  test(id: string, options?: PostOptions): Promise<T.WebhookDelivery> {
    return this.calls.json('POST', `/webhooks/${e(id)}/test`, undefined, options);
  }

  deliveries(id: string, query?: PageQuery, options?: CallOptions): Listing<T.WebhookDelivery> {
    return this.calls.list(`/webhooks/${e(id)}/deliveries`, 'items', query, options);
  }

  redeliver(id: string, deliveryId: string, options?: PostOptions): Promise<T.WebhookDelivery> {
    return this.calls.json('POST', `/webhooks/${e(id)}/deliveries/${e(deliveryId)}/redeliver`, undefined, options);
  }
}

/** Every resource group of one account. */
export class Account {
  readonly shipments: Shipments;
  readonly sets: Sets;
  readonly items: Items;
  readonly pointsOfInterest: PointsOfInterest;
  readonly devices: Devices;
  readonly operations: Operations;
  readonly readings: Readings;
  readonly alerts: Alerts;
  readonly events: Events;
  readonly webhooks: Webhooks;
  readonly shareLinks: ShareLinks;

  constructor(
    transport: Transport,
    readonly id: string,
  ) {
    if (typeof id !== 'string' || id === '') throw new TypeError('account(id): an account id is required');
    const calls = new AccountCalls(transport, `/v1/accounts/${e(id)}`);
    this.shipments = new Shipments(calls);
    this.sets = new Sets(calls);
    this.items = new Items(calls);
    this.pointsOfInterest = new PointsOfInterest(calls);
    this.devices = new Devices(calls);
    this.operations = new Operations(calls);
    this.readings = new Readings(calls);
    this.alerts = new Alerts(calls);
    this.events = new Events(calls);
    this.webhooks = new Webhooks(calls);
    this.shareLinks = new ShareLinks(calls);
  }
}
