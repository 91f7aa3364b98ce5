import { CreateShipments1763800000000 } from './1763800000000-create-shipments.js';
import { CreatePointsOfInterest1763800001000 } from './1763800001000-create-points-of-interest.js';
import { ConstrainShipmentFields1763800002000 } from './1763800002000-constrain-shipment-fields.js';
import { CreateSetsAndItems1763800003000 } from './1763800003000-create-sets-and-items.js';
import { CreateOperations1763800004000 } from './1763800004000-create-operations.js';
import { StoreShipmentJson1763800005000 } from './1763800005000-store-shipment-json.js';
import { IndexKeysetsByTenant1763800006000 } from './1763800006000-index-keysets-by-tenant.js';
import { IndexOperationLimits1763800006400 } from './1763800006400-index-operation-limits.js';
import { CreateOutbox1763800010000 } from './1763800010000-create-outbox.js';
import { CreateEvents1763800011000 } from './1763800011000-create-events.js';
import { CreateWebhooks1763800012000 } from './1763800012000-create-webhooks.js';
import { IndexPendingDeliveries1763800013500 } from './1763800013500-index-pending-deliveries.js';
import { CreateAlertsAndVisits1763800020000 } from './1763800020000-create-alerts-and-visits.js';
import { AddShipmentLastPosition1763800021000 } from './1763800021000-add-shipment-last-position.js';
import { CreateShipmentEvaluations1763800022000 } from './1763800022000-create-shipment-evaluations.js';
import { CompressOutboxWithLz41763800023000 } from './1763800023000-compress-outbox-with-lz4.js';
import { KeepEvaluationUpdatesHot1763800024000 } from './1763800024000-keep-evaluation-updates-hot.js';
import { BoundDeliveryAttemptLogs1763800029100 } from './1763800029100-bound-delivery-attempt-logs.js';
import { RecordClaimedAttempts1763800029200 } from './1763800029200-record-claimed-attempts.js';
import { BoundWebhookAmplification1763800029300 } from './1763800029300-bound-webhook-amplification.js';
import { CreateLeases1763800031000 } from './1763800031000-create-leases.js';
import { NotifyDueDeliveries1763800031100 } from './1763800031100-notify-due-deliveries.js';
import { AddShipmentEta1763800031200 } from './1763800031200-add-shipment-eta.js';
import { CreateShareLinks1763800032000 } from './1763800032000-create-share-links.js';
import { KeepEstimateUpdatesHot1763800033000 } from './1763800033000-keep-estimate-updates-hot.js';
import { VersionPlacesPerAccount1763800034000 } from './1763800034000-version-places-per-account.js';
import { MoveShipmentPositionInPlace1763800035000 } from './1763800035000-move-shipment-position-in-place.js';

/** Every OMS migration, oldest first. */
export const omsMigrations = [
  CreateShipments1763800000000,
  CreatePointsOfInterest1763800001000,
  ConstrainShipmentFields1763800002000,
  CreateSetsAndItems1763800003000,
  CreateOperations1763800004000,
  StoreShipmentJson1763800005000,
  IndexKeysetsByTenant1763800006000,
  IndexOperationLimits1763800006400,
  CreateOutbox1763800010000,
  CreateEvents1763800011000,
  CreateWebhooks1763800012000,
  IndexPendingDeliveries1763800013500,
  CreateAlertsAndVisits1763800020000,
  AddShipmentLastPosition1763800021000,
  CreateShipmentEvaluations1763800022000,
  CompressOutboxWithLz41763800023000,
  KeepEvaluationUpdatesHot1763800024000,
  BoundDeliveryAttemptLogs1763800029100,
  RecordClaimedAttempts1763800029200,
  BoundWebhookAmplification1763800029300,
  CreateLeases1763800031000,
  NotifyDueDeliveries1763800031100,
  AddShipmentEta1763800031200,
  CreateShareLinks1763800032000,
  KeepEstimateUpdatesHot1763800033000,
  VersionPlacesPerAccount1763800034000,
  MoveShipmentPositionInPlace1763800035000,
];
