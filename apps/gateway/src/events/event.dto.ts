import { ApiProperty } from '@nestjs/swagger';
import { EventType } from '@tracking/contracts';
import { PageMetadataDto } from '../http/common.dto.js';

export class EventDto {
  @ApiProperty({ format: 'uuid', example: '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8a', description: 'A UUIDv7; webhooks carry it as `webhook-id`.' })
  id: string;
  @ApiProperty({ enum: EventType, enumName: 'EventType', example: EventType.ShipmentCreated }) type: EventType;
  @ApiProperty({ format: 'date-time', example: '2025-11-22T08:30:00.000Z', description: 'When the change was recorded.' }) occurredAt: string;
  @ApiProperty({ format: 'uuid' }) accountId: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: true,
    description:
      'shipment.* (but arrived/departed/eta_changed): the shipment after the change (deleted: its last state); ' +
      'shipment.eta_changed: {shipmentId, eta, previousArrivalAt} (eta.arrivalAt moved by more than max(10 min, 10 % of the remaining time) ' +
      'from the value last published); device.created|updated|retired|deleted: ' +
      'the device; device.assigned|unassigned: {deviceId, shipmentId, setId}; alert.opened|closed|acknowledged: the alert; ' +
      'alert.suppressed: {shipmentId, deviceId, kind, until} (the shipment opened its alerts allowed per clock hour; no further alert of it ' +
      'opens before until, and this event comes once per shipment and hour); operation.finished: the operation; webhook.disabled: the webhook ' +
      '(no secret; its url without user info, query and fragment).',
  })
  data: Record<string, unknown>;
}

export class EventPageDto {
  @ApiProperty({ type: [EventDto] }) items: EventDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}
