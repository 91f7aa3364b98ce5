import { CreateDevices1763800000000 } from './1763800000000-create-devices.js';
import { CompleteDevices1763800004000 } from './1763800004000-complete-devices.js';
import { IndexDeviceSets1763800005000 } from './1763800005000-index-device-sets.js';
import { CreateReleasedLinkTargets1763800006000 } from './1763800006000-create-released-link-targets.js';
import { CreateOperationOutcomes1763800007000 } from './1763800007000-create-operation-outcomes.js';
import { StoreDeviceJson1763800008000 } from './1763800008000-store-device-json.js';
import { IndexDeviceKeysetsByTenant1763800009000 } from './1763800009000-index-device-keysets-by-tenant.js';
import { CreateOutbox1763800010000 } from './1763800010000-create-outbox.js';
import { CreateReadings1763800011000 } from './1763800011000-create-readings.js';
import { CreateAssignmentPeriods1763800012000 } from './1763800012000-create-assignment-periods.js';
import { CompressOutboxWithLz41763800013000 } from './1763800013000-compress-outbox-with-lz4.js';
import { CreateDeviceCredentials1763900031000 } from './1763900031000-create-device-credentials.js';
import { KeepDeviceUpdatesHot1763900031100 } from './1763900031100-keep-device-updates-hot.js';
import { MoveDeviceJsonInPlace1763900031200 } from './1763900031200-move-device-json-in-place.js';
import { CutDeviceJsonByBytes1763900031300 } from './1763900031300-cut-device-json-by-bytes.js';

/** Every DMS migration, oldest first. */
export const dmsMigrations = [
  CreateDevices1763800000000,
  CompleteDevices1763800004000,
  IndexDeviceSets1763800005000,
  CreateReleasedLinkTargets1763800006000,
  CreateOperationOutcomes1763800007000,
  StoreDeviceJson1763800008000,
  IndexDeviceKeysetsByTenant1763800009000,
  CreateOutbox1763800010000,
  CreateReadings1763800011000,
  CreateAssignmentPeriods1763800012000,
  CompressOutboxWithLz41763800013000,
  CreateDeviceCredentials1763900031000,
  KeepDeviceUpdatesHot1763900031100,
  MoveDeviceJsonInPlace1763900031200,
  CutDeviceJsonByBytes1763900031300,
];
