import type { IngestEntry, IngestResult } from './readings.js';
import type { AccountScope, PageMetadata, PageRequest } from '../paging.js';

/** How a tracker reaches the device gateway (docs/device-gateway.md). */
export enum CredentialProtocol {
  Mqtt = 'Mqtt',
  Http = 'Http',
  Teltonika = 'Teltonika',
}

/** At most this many credentials per device (409 CredentialLimitReached beyond). */
export const MAX_CREDENTIALS_PER_DEVICE = 5;
/** An `Mqtt` or `Http` identifier: 1..64 of these characters. */
export const CREDENTIAL_IDENTIFIER_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
/** A `Teltonika` identifier: the device's IMEI, 15 digits. */
export const IMEI_PATTERN = /^[0-9]{15}$/;
/** Every secret starts so, followed by base64url of 32 random bytes. */
export const DEVICE_SECRET_PREFIX = 'dvs_';

/** A device credential as the API shows it; `secret` only in the answer to create, for `Mqtt` and `Http`. */
export interface DeviceCredential {
  id: string;
  deviceId: string;
  protocol: CredentialProtocol;
  identifier: string;
  createdAt: string;
  lastUsedAt: string | null;
}

export interface DeviceCredentialWithSecret extends DeviceCredential {
  secret?: string;
}

export interface DeviceCredentialPage {
  credentials: DeviceCredential[];
  metadata: PageMetadata;
}

export interface CredentialInput {
  protocol: CredentialProtocol;
  /** Mqtt, Http: defaults to the device's id. Teltonika: required, the IMEI. */
  identifier?: string;
}

export interface CreateCredentialRequest extends AccountScope {
  deviceId: string;
  credential: CredentialInput;
}

export interface ListCredentialsRequest extends AccountScope {
  deviceId: string;
  page: PageRequest;
}

export interface DeleteCredentialRequest extends AccountScope {
  deviceId: string;
  credentialId: string;
}

/**
 * The device gateway asks who a connection is: `secret` null for Teltonika (the IMEI alone). For `Http`
 * the secret alone names the credential and `identifier` may be empty (the gateway checks it itself).
 */
export interface AuthenticateDeviceRequest {
  protocol: CredentialProtocol;
  identifier: string;
  secret: string | null;
}

/** The live credential behind an authentication; null when none (unknown, wrong secret, deleted, retired device). */
export interface AuthenticatedDevice {
  credentialId: string;
  deviceId: string;
  tenantId: string;
  accountId: string;
  protocol: CredentialProtocol;
  identifier: string;
}

/** Which of these credentials are still live (not deleted, device neither retired nor deleted). */
export interface LiveCredentialsRequest {
  credentialIds: string[];
}

export interface LiveCredentialsReply {
  live: string[];
}

/** The readings of one device message (an HTTP request, an MQTT publish, a Teltonika packet). */
export interface DeviceSubmission {
  tenantId: string;
  accountId: string;
  credentialId: string;
  deviceId: string;
  /** Judged by the device gateway (`judgeDeviceEntries`), `deviceId` set; `index` is the position in the message. */
  entries: IngestEntry[];
}

/** Many devices' messages, stored in one DMS transaction (device gateway -> DMS). */
export interface IngestDeviceReadingsRequest {
  submissions: DeviceSubmission[];
}

/** Per submission, in request order: what `POST /readings` would answer, or `revoked` (nothing stored). */
export type DeviceSubmissionOutcome = ({ kind: 'committed' } & IngestResult) | { kind: 'revoked' };

export interface IngestDeviceReadingsResult {
  outcomes: DeviceSubmissionOutcome[];
}
