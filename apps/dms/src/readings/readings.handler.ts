import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import {
  type IngestDeviceReadingsRequest,
  type IngestDeviceReadingsResult,
  type IngestReadingsRequest,
  type IngestResult,
  type ListReadingsRequest,
  type ReadingPage,
  type ShipmentReadingsPage,
  type ShipmentReadingsRequest,
  Subjects,
} from '@tracking/contracts';
import { Handles } from '@tracking/messaging';
import { ReadingsService } from './readings.service.js';

@Controller()
export class ReadingsHandler {
  constructor(private readonly readings: ReadingsService) {}

  @Handles(Subjects.dms.readings.ingest)
  ingest(@Payload() request: IngestReadingsRequest): Promise<IngestResult> {
    return this.readings.ingest(request);
  }

  /** Called by the device gateway only: many devices' messages in one transaction. */
  @Handles(Subjects.dms.readings.ingestFromDevices)
  ingestFromDevices(@Payload() request: IngestDeviceReadingsRequest): Promise<IngestDeviceReadingsResult> {
    return this.readings.ingestFromDevices(request);
  }

  @Handles(Subjects.dms.readings.list)
  list(@Payload() request: ListReadingsRequest): Promise<ReadingPage> {
    return this.readings.list(request);
  }

  /** Called by the OMS only (geofence evaluation restore); pages through with `after`. */
  @Handles(Subjects.dms.readings.ofShipment)
  ofShipment(@Payload() request: ShipmentReadingsRequest): Promise<ShipmentReadingsPage> {
    return this.readings.ofShipment(request);
  }
}
