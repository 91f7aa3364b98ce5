import { Injectable } from '@nestjs/common';
import type { AssignmentRequest } from '@tracking/contracts';
import { AlertLifecycle } from '../alerts/alert-lifecycle.js';
import { DmsClient } from '../dms/dms.client.js';
import { ShipmentContentsService } from '../sets/shipment-contents.service.js';

/**
 * Device assignment, decided across both services in one synchronous call: the OMS checks the shipment
 * and the set, the DMS (which owns the link on the device row) checks the device and links it.
 *
 * The OMS holds the shipment `FOR SHARE` and the set `FOR KEY SHARE` while it waits for the DMS. That is
 * deliberate: `complete`, `cancel` and DELETE of the shipment lock it `FOR UPDATE`, and DELETE of the set
 * locks the set `FOR UPDATE`, and each of them releases the devices in its own transaction; so none of
 * them can run between our check ("the shipment is ongoing, the set exists") and the link, and none can
 * leave a device linked to a closed shipment or a deleted set. Should this OMS give up or die while the
 * DMS is still linking, the DMS's own guards (released shipments and sets, the deadline we send) keep
 * that true without our lock. The price is that a shipment's lock is held
 * for a round trip to the DMS, and that no assignment can be made while the DMS is down.
 */
@Injectable()
export class AssignmentsService {
  constructor(
    private readonly contents: ShipmentContentsService,
    private readonly dms: DmsClient,
    private readonly alerts: AlertLifecycle,
  ) {}

  assign(request: AssignmentRequest): Promise<void> {
    return this.contents.write(request, async (shipment) => {
      await shipment.requireSet(request.setId, 'for_key_share');
      shipment.assertOpen();
      const { tenantId, accountId, deviceId, shipmentId, setId } = request;
      await this.dms.assign({ tenantId, accountId, deviceId, shipmentId, setId });
    });
  }

  unassign(request: AssignmentRequest): Promise<void> {
    return this.contents.write(request, async (shipment) => {
      await shipment.requireSet(request.setId, 'for_key_share');
      shipment.assertOpen();
      const { tenantId, accountId, deviceId, shipmentId, setId } = request;
      await this.dms.unassign({ tenantId, accountId, deviceId, shipmentId, setId });
      // A released device's open alerts on the shipment end now, in the same transaction (docs/alerts-and-visits.md).
      await this.alerts.close(shipment.manager, { shipmentId: shipmentId.toLowerCase(), deviceId: deviceId.toLowerCase() }, new Date());
    });
  }
}
