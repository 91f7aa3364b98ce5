import type {
  AssignDeviceRequest,
  CreateDeviceRequest,
  DeleteDeviceRequest,
  Device,
  DevicePage,
  DeviceRequest,
  LinkedDevices,
  LinkedDevicesRequest,
  LinkEntry,
  ListDevicesRequest,
  OperationChunk,
  OperationChunkResult,
  ReleaseDevicesRequest,
  ReleaseDevicesResult,
  RetireDeviceRequest,
  RetireDeviceResult,
  RetireEntry,
  PurgeOperationsRequest,
  SettleOperationRequest,
  UnassignDeviceRequest,
  UpdateDeviceRequest,
} from './dms/devices.js';
import type {
  AuthenticateDeviceRequest,
  AuthenticatedDevice,
  CreateCredentialRequest,
  DeleteCredentialRequest,
  DeviceCredentialPage,
  DeviceCredentialWithSecret,
  IngestDeviceReadingsRequest,
  IngestDeviceReadingsResult,
  ListCredentialsRequest,
  LiveCredentialsReply,
  LiveCredentialsRequest,
} from './dms/credentials.js';
import type { IngestReadingsRequest, IngestResult, ListReadingsRequest, ReadingPage, ShipmentReadingsPage, ShipmentReadingsRequest } from './dms/readings.js';
import type { TrackReply, TrackRequest } from './dms/tracks.js';
import type { EventPage, ListEventsRequest } from './events/events.js';
import type { Alert, AlertRequest, ListAlertsRequest, ListVisitsRequest, Visit } from './oms/alerts.js';
import type { AssignmentRequest } from './oms/assignments.js';
import type { ItemPage, Versioned } from './oms/common.js';
import type { CreateItemRequest, DeleteItemRequest, Item, ItemRequest, ListItemsRequest, UpdateItemRequest } from './oms/items.js';
import type {
  CreateOperationRequest,
  ListOperationResultsRequest,
  ListOperationsRequest,
  Operation,
  OperationPage,
  OperationRequest,
  OperationResultPage,
} from './oms/operations.js';
import type {
  CreatePointOfInterestRequest,
  DeletePointOfInterestRequest,
  ListPointsOfInterestRequest,
  PointOfInterest,
  PointOfInterestRequest,
  UpdatePointOfInterestRequest,
} from './oms/points-of-interest.js';
import type {
  CreateShareLinkRequest,
  ListShareLinksRequest,
  ResolvedShareLink,
  ResolveShareLinkRequest,
  ShareLink,
  ShareLinkRequest,
} from './oms/share-links.js';
import type { CreateSetRequest, DeleteSetRequest, ListSetsRequest, SetRequest, ShipmentSet, UpdateSetRequest } from './oms/sets.js';
import type {
  CreateShipmentRequest,
  DeleteShipmentRequest,
  ListShipmentsRequest,
  Shipment,
  ShipmentRequest,
  TransitionShipmentRequest,
  TransitionShipmentResult,
  UpdateShipmentRequest,
} from './oms/shipments.js';
import type {
  CreateWebhookRequest,
  DeleteWebhookRequest,
  Delivery,
  DeliveryRequest,
  ListDeliveriesRequest,
  ListWebhooksRequest,
  UpdateWebhookRequest,
  Webhook,
  WebhookRequest,
  WebhookWithSecret,
} from './oms/webhooks.js';
import { type Subject, Subjects } from './subjects.js';

/** One NATS hop: what the caller sends and what the handler answers. */
interface Hop<Request, Reply> {
  request: Request;
  reply: Reply;
}

/** A reply that carries nothing: the handler returns nothing, the caller gets `null` on the wire. */
type Empty = void;

/** The answer of a service's liveness probe. */
export interface PingReply {
  status: 'ok';
}

/**
 * The request and reply type of every subject: `NatsRpcClient.call(subject, request)` infers both from
 * it, and `@Handles(subject)` checks a handler's payload and return type against it.
 */
export interface Contracts {
  [Subjects.oms.ping]: Hop<Record<string, never>, PingReply>;

  [Subjects.oms.shipments.list]: Hop<ListShipmentsRequest, ItemPage<Shipment>>;
  [Subjects.oms.shipments.create]: Hop<CreateShipmentRequest, Versioned<Shipment>>;
  [Subjects.oms.shipments.get]: Hop<ShipmentRequest, Versioned<Shipment>>;
  [Subjects.oms.shipments.update]: Hop<UpdateShipmentRequest, Versioned<Shipment>>;
  [Subjects.oms.shipments.delete]: Hop<DeleteShipmentRequest, Empty>;
  [Subjects.oms.shipments.transition]: Hop<TransitionShipmentRequest, TransitionShipmentResult>;

  [Subjects.oms.sets.list]: Hop<ListSetsRequest, ItemPage<ShipmentSet>>;
  [Subjects.oms.sets.create]: Hop<CreateSetRequest, Versioned<ShipmentSet>>;
  [Subjects.oms.sets.get]: Hop<SetRequest, Versioned<ShipmentSet>>;
  [Subjects.oms.sets.update]: Hop<UpdateSetRequest, Versioned<ShipmentSet>>;
  [Subjects.oms.sets.delete]: Hop<DeleteSetRequest, Empty>;

  [Subjects.oms.items.list]: Hop<ListItemsRequest, ItemPage<Item>>;
  [Subjects.oms.items.create]: Hop<CreateItemRequest, Versioned<Item>>;
  [Subjects.oms.items.get]: Hop<ItemRequest, Versioned<Item>>;
  [Subjects.oms.items.update]: Hop<UpdateItemRequest, Versioned<Item>>;
  [Subjects.oms.items.delete]: Hop<DeleteItemRequest, Empty>;

  [Subjects.oms.pointsOfInterest.list]: Hop<ListPointsOfInterestRequest, ItemPage<PointOfInterest>>;
  [Subjects.oms.pointsOfInterest.create]: Hop<CreatePointOfInterestRequest, Versioned<PointOfInterest>>;
  [Subjects.oms.pointsOfInterest.get]: Hop<PointOfInterestRequest, Versioned<PointOfInterest>>;
  [Subjects.oms.pointsOfInterest.update]: Hop<UpdatePointOfInterestRequest, Versioned<PointOfInterest>>;
  [Subjects.oms.pointsOfInterest.delete]: Hop<DeletePointOfInterestRequest, Empty>;

  [Subjects.oms.assignments.assign]: Hop<AssignmentRequest, Empty>;
  [Subjects.oms.assignments.unassign]: Hop<AssignmentRequest, Empty>;

  [Subjects.oms.operations.create]: Hop<CreateOperationRequest, Versioned<Operation>>;
  [Subjects.oms.operations.list]: Hop<ListOperationsRequest, OperationPage>;
  [Subjects.oms.operations.get]: Hop<OperationRequest, Versioned<Operation>>;
  [Subjects.oms.operations.results]: Hop<ListOperationResultsRequest, OperationResultPage>;
  [Subjects.oms.operations.cancel]: Hop<OperationRequest, Empty>;

  [Subjects.oms.events.list]: Hop<ListEventsRequest, EventPage>;
  [Subjects.oms.webhooks.list]: Hop<ListWebhooksRequest, ItemPage<Webhook>>;
  [Subjects.oms.webhooks.create]: Hop<CreateWebhookRequest, Versioned<WebhookWithSecret>>;
  [Subjects.oms.webhooks.get]: Hop<WebhookRequest, Versioned<Webhook>>;
  [Subjects.oms.webhooks.update]: Hop<UpdateWebhookRequest, Versioned<Webhook>>;
  [Subjects.oms.webhooks.delete]: Hop<DeleteWebhookRequest, Empty>;
  [Subjects.oms.webhooks.rotateSecret]: Hop<WebhookRequest, Versioned<WebhookWithSecret>>;
  [Subjects.oms.webhooks.enable]: Hop<WebhookRequest, Empty>;
  [Subjects.oms.webhooks.test]: Hop<WebhookRequest, Delivery>;
  [Subjects.oms.webhooks.deliveries]: Hop<ListDeliveriesRequest, ItemPage<Delivery>>;
  [Subjects.oms.webhooks.redeliver]: Hop<DeliveryRequest, Delivery>;

  [Subjects.oms.alerts.list]: Hop<ListAlertsRequest, ItemPage<Alert>>;
  [Subjects.oms.alerts.get]: Hop<AlertRequest, Alert>;
  [Subjects.oms.alerts.acknowledge]: Hop<AlertRequest, Empty>;
  [Subjects.oms.visits.list]: Hop<ListVisitsRequest, ItemPage<Visit>>;

  [Subjects.oms.shareLinks.create]: Hop<CreateShareLinkRequest, ShareLink>;
  [Subjects.oms.shareLinks.list]: Hop<ListShareLinksRequest, ItemPage<ShareLink>>;
  [Subjects.oms.shareLinks.delete]: Hop<ShareLinkRequest, Empty>;
  [Subjects.oms.shareLinks.resolve]: Hop<ResolveShareLinkRequest, ResolvedShareLink | null>;

  [Subjects.dms.ping]: Hop<Record<string, never>, PingReply>;

  [Subjects.dms.devices.list]: Hop<ListDevicesRequest, DevicePage>;
  [Subjects.dms.devices.create]: Hop<CreateDeviceRequest, Versioned<Device>>;
  [Subjects.dms.devices.get]: Hop<DeviceRequest, Versioned<Device>>;
  [Subjects.dms.devices.update]: Hop<UpdateDeviceRequest, Versioned<Device>>;
  [Subjects.dms.devices.delete]: Hop<DeleteDeviceRequest, Empty>;
  [Subjects.dms.devices.retire]: Hop<RetireDeviceRequest, RetireDeviceResult>;
  [Subjects.dms.devices.assign]: Hop<AssignDeviceRequest, Empty>;
  [Subjects.dms.devices.unassign]: Hop<UnassignDeviceRequest, Empty>;
  [Subjects.dms.devices.release]: Hop<ReleaseDevicesRequest, ReleaseDevicesResult>;
  [Subjects.dms.devices.linked]: Hop<LinkedDevicesRequest, LinkedDevices>;

  [Subjects.dms.credentials.create]: Hop<CreateCredentialRequest, DeviceCredentialWithSecret>;
  [Subjects.dms.credentials.list]: Hop<ListCredentialsRequest, DeviceCredentialPage>;
  [Subjects.dms.credentials.delete]: Hop<DeleteCredentialRequest, Empty>;
  [Subjects.dms.credentials.authenticate]: Hop<AuthenticateDeviceRequest, AuthenticatedDevice | null>;
  [Subjects.dms.credentials.live]: Hop<LiveCredentialsRequest, LiveCredentialsReply>;

  [Subjects.dms.readings.ingest]: Hop<IngestReadingsRequest, IngestResult>;
  [Subjects.dms.readings.ingestFromDevices]: Hop<IngestDeviceReadingsRequest, IngestDeviceReadingsResult>;
  [Subjects.dms.readings.list]: Hop<ListReadingsRequest, ReadingPage>;
  [Subjects.dms.readings.ofShipment]: Hop<ShipmentReadingsRequest, ShipmentReadingsPage>;
  [Subjects.dms.tracks.get]: Hop<TrackRequest, TrackReply>;
  [Subjects.dms.operations.link]: Hop<OperationChunk<LinkEntry>, OperationChunkResult>;
  [Subjects.dms.operations.retire]: Hop<OperationChunk<RetireEntry>, OperationChunkResult>;
  [Subjects.dms.operations.settle]: Hop<SettleOperationRequest, OperationChunkResult>;
  [Subjects.dms.operations.purge]: Hop<PurgeOperationsRequest, void>;
}

/** What a caller sends on `subject`. */
export type RequestOf<T extends Subject> = Contracts[T]['request'];
/** What the handler of `subject` answers (`void`: nothing; the caller gets `null`). */
export type ReplyOf<T extends Subject> = Contracts[T]['reply'];

/** Every subject has a contract, and every contract a subject: a subject left out fails to compile here. */
export type ContractsCoverEverySubject = Assert<[Exclude<Subject, keyof Contracts>, Exclude<keyof Contracts, Subject>] extends [never, never] ? true : false>;
type Assert<T extends true> = T;
