/**
 * Names for the API's schemas, derived from the OpenAPI document the gateway serves (`generated/api.ts`,
 * regenerated with `npm run -s sdk:types`). Written by hand only where the document cannot say what the
 * SDK promises: each such type says why in its comment.
 */
import type { components, operations } from './generated/api.js';

type Schemas = components['schemas'];
type QueryOf<Operation> = Operation extends { parameters: { query?: infer Query } } ? Omit<NonNullable<Query>, 'cursor' | 'limit' | 'includeTotal'> : never;

export type { components, operations, paths } from './generated/api.js';

/** One entry of `client.accounts()`: `{id, name, role}`. */
export type AccountSummary = Schemas['AccountDto'];
export type Role = Schemas['Role'];

export type Shipment = Schemas['ShipmentDto'];
export type ShipmentStatus = Schemas['ShipmentStatus'];
export type CreateShipment = Schemas['CreateShipmentDto'];
export type UpdateShipment = Schemas['UpdateShipmentDto'];
export type ShipmentFilters = QueryOf<operations['shipmentsList']>;

export type ShipmentSet = Schemas['SetDto'];
export type CreateSet = Schemas['CreateSetDto'];
export type UpdateSet = Schemas['UpdateSetDto'];

export type Item = Schemas['ItemDto'];
export type CreateItem = Schemas['CreateItemDto'];
export type UpdateItem = Schemas['UpdateItemDto'];

export type PointOfInterest = Schemas['PointOfInterestDto'];
export type CreatePointOfInterest = Schemas['CreatePointOfInterestDto'];
export type UpdatePointOfInterest = Schemas['UpdatePointOfInterestDto'];

export type Device = Schemas['DeviceDto'];
export type DeviceStatus = Schemas['DeviceStatus'];
export type CreateDevice = Schemas['CreateDeviceDto'];
export type UpdateDevice = Schemas['UpdateDeviceDto'];
export type DeviceFilters = QueryOf<operations['devicesList']>;

export type CredentialProtocol = Schemas['CredentialProtocol'];
export type CreateCredential = Schemas['CreateCredentialDto'];
export type Credential = Schemas['CredentialDto'];
export type CredentialWithSecret = Schemas['CredentialWithSecretDto'];

export type Operation = Schemas['OperationDto'];
export type OperationStatus = Schemas['OperationStatus'];
export type OperationResult = Schemas['OperationResultDto'];
export type OperationFilters = QueryOf<operations['operationsList']>;
export type OperationResultFilters = QueryOf<operations['operationsResults']>;
export type BulkAssignment = Schemas['BulkAssignmentEntryDto'];

export type ErrorCode = Schemas['ErrorCode'];

export type ReadingLocation = Schemas['ReadingLocationDto'];
export type ReadingInput = Schemas['ReadingInputDto'];

/**
 * Partly by hand: the document marks a stored reading's measurements and location optional (the DTO
 * shares them with `ReadingInputDto`), while the API always sends every one of them, null when absent,
 * and a stored location with all its fields.
 */
export type Reading = Required<Omit<Schemas['ReadingDto'], 'location'>> & { location: Required<ReadingLocation> | null };

export type IngestResult = Schemas['IngestResultDto'];
export type ReadingFilters = QueryOf<operations['readingsList']>;

export type TrackPoint = Schemas['TrackPointDto'];
export type Track = Schemas['TrackDto'];
export type TrackFilters = QueryOf<operations['tracksGet']>;
/** `GET .../track` with `Accept: application/geo+json`: a `FeatureCollection`, one `Feature` per device. */
export type TrackGeoJson = operations['tracksGet']['responses'][200]['content']['application/geo+json'];

export type Visit = Schemas['VisitDto'];

export type CreateShareLink = Schemas['CreateShareLinkDto'];
export type ShareLink = Schemas['ShareLinkDto'];
export type CreatedShareLink = Schemas['CreatedShareLinkDto'];
/** `GET /v1/public/tracking/{token}`: what a share link shows, read without credentials. */
export type PublicTracking = Schemas['PublicTrackingDto'];

export type AlertKind = Schemas['AlertKind'];
export type AlertStatus = Schemas['AlertStatus'];
export type Alert = Schemas['AlertDto'];

/** Partly by hand: the document gives the query's `status` and `kind` as any string, not their enums. */
export type AlertFilters = Omit<QueryOf<operations['alertsList']>, 'status' | 'kind'> & { status?: AlertStatus; kind?: AlertKind };

export type EventType = Schemas['EventType'];

/**
 * An event of the account's feed, and the body of a webhook delivery. Partly by hand: `Data` (the
 * payload's type, which depends on `type`) is a type parameter the document cannot express.
 */
export type TrackingEvent<Data = unknown> = Omit<Schemas['EventDto'], 'data'> & { data: Data };

/**
 * Partly by hand: `type` also takes a list, which the SDK sends as the comma list the document's single
 * string describes.
 */
export type EventFilters = Omit<QueryOf<operations['eventsList']>, 'type'> & {
  /** One type or several (sent as a comma list). */
  type?: string | string[];
};

export type WebhookStatus = Schemas['WebhookStatus'];
export type Webhook = Schemas['WebhookDto'];
/** A webhook as create and rotate-secret answer it: with its signing secret, shown only there. */
export type WebhookWithSecret = Schemas['WebhookWithSecretDto'];
export type CreateWebhook = Schemas['CreateWebhookDto'];
export type UpdateWebhook = Schemas['UpdateWebhookDto'];

export type DeliveryStatus = Schemas['DeliveryStatus'];
export type DeliveryAttempt = Schemas['DeliveryAttemptDto'];
/** `attempts` holds the last 20 at most, oldest first; `attemptsTotal` counts every attempt ever made. */
export type WebhookDelivery = Schemas['DeliveryDto'];
