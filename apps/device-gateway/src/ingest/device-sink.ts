import type { ErrorBody } from '@tracking/contracts';

/**
 * The seam between the protocol listeners (HTTP, MQTT, Teltonika) and the rest of the device gateway.
 * A listener authenticates a device through `DeviceAuthenticator`, turns what the device sent into
 * readings in our JSON shape (the entries of `POST /readings`, without `deviceId` or `serialNumber`:
 * the credential names the device), and hands them to `DeviceSink.submit`, which judges them with the
 * same code as `POST /readings`, gathers them with other devices' readings into one DMS call, and
 * resolves only once the DMS committed them. A listener acknowledges to the device only after that.
 */

export type DeviceProtocol = 'Mqtt' | 'Http' | 'Teltonika';

/** Who a connection or request is, once its credential was accepted. */
export interface DeviceIdentity {
  credentialId: string;
  deviceId: string;
  accountId: string;
  /**
   * The device's tenant (its readings limit, the DMS's scope). Always set by `DmsAuthenticator`; optional
   * only so that identities written before it was added still compile.
   */
  tenantId?: string;
  protocol: DeviceProtocol;
  /** The credential's identifier: the MQTT username / topic segment, the OsmAnd `id`, the Teltonika IMEI. */
  identifier: string;
}

export interface DeviceAuthenticator {
  /**
   * The identity behind a credential, or null when none is live: unknown identifier, wrong secret,
   * deleted credential, retired or deleted device. `secret` is null for Teltonika (the IMEI alone).
   * Rejects (a `DomainError` with code `ServiceUnavailable` or `GatewayTimeout`) when the DMS cannot
   * answer: the listener then says "try later" (HTTP 503, MQTT server unavailable), never "wrong secret".
   */
  authenticate(protocol: DeviceProtocol, identifier: string, secret: string | null): Promise<DeviceIdentity | null>;
  /**
   * Calls `onRevoked` (once) when the credential stops being live (deleted, device retired or deleted),
   * at the latest 60 s after it happened. Returns a function that stops watching (call it on close).
   */
  watch(identity: DeviceIdentity, onRevoked: () => void): () => void;
}

/** What `POST /readings` answers, for the readings of one submit. `index` is the position in `readings`. */
export interface DeviceReadingsOutcome {
  accepted: number;
  duplicates: number;
  /** Of `accepted`, those recorded while the device was on no shipment (as `POST /readings` counts them). */
  unassigned: number;
  rejected: { index: number; error: ErrorBody }[];
}

export type SubmitResult =
  /** Committed in the DMS (the accepted ones) or judged and refused (the rejected ones): acknowledge. */
  | { kind: 'committed'; outcome: DeviceReadingsOutcome }
  /** Over the device's message limit or the tenant's readings limit: do not acknowledge yet. */
  | { kind: 'limited'; retryAfterSeconds: number }
  /** The credential is no longer live: close the connection / answer 401. */
  | { kind: 'revoked' }
  /** The DMS could not be reached or did not answer in time: nothing is known to be stored, do not acknowledge. */
  | { kind: 'unavailable' };

export interface DeviceSink {
  /**
   * `readings`: 1..1000 plain objects in our JSON reading shape (as parsed, not yet validated). Each
   * call is one device "message" for the per-device message limit.
   */
  submit(identity: DeviceIdentity, readings: unknown[]): Promise<SubmitResult>;
}
