import { ApiProperty } from '@nestjs/swagger';
import { AlertKind, AlertStatus } from '@tracking/contracts';
import { PageMetadataDto } from '../http/common.dto.js';

const EXAMPLE_TIME = '2025-11-22T08:30:00.000Z';

export class AlertDto {
  @ApiProperty({ format: 'uuid', example: '0190a4a0-8a5b-7f7e-8c4d-6e5f4a3b2c1d' }) id: string;
  @ApiProperty({ format: 'uuid', description: 'The shipment; kept after the shipment is deleted.' }) shipmentId: string;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The device whose readings raised it; null for SignalLoss (the whole shipment).' })
  deviceId: string | null;
  @ApiProperty({ enum: AlertKind, enumName: 'AlertKind', example: AlertKind.TemperatureHigh }) kind: AlertKind;
  @ApiProperty({ enum: AlertStatus, enumName: 'AlertStatus', example: AlertStatus.Open, description: 'At most one Open alert per shipment, device and kind.' })
  status: AlertStatus;
  @ApiProperty({
    format: 'date-time',
    example: EXAMPLE_TIME,
    description: 'Event time: the first out-of-range reading (SignalLoss: the last receipt plus maxSilenceSeconds).',
  })
  startedAt: string;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    example: null,
    description: 'The first reading back in range, or the moment its shipment closed or its device was released; null while Open.',
  })
  endedAt: string | null;
  @ApiProperty({ type: Number, example: 8, description: 'The bound of the condition that was crossed (°C, %, g, lux, %, seconds).' }) threshold: number;
  @ApiProperty({ type: Number, nullable: true, example: 9.4, description: 'The worst value seen while it was open.' }) peakValue: number | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null, description: 'Set by the first acknowledge.' })
  acknowledgedAt: string | null;
  @ApiProperty({ format: 'date-time', example: EXAMPLE_TIME }) createdAt: string;
  @ApiProperty({ format: 'date-time', example: EXAMPLE_TIME }) updatedAt: string;
}

export class AlertPageDto {
  @ApiProperty({ type: [AlertDto] }) items: AlertDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}

export class VisitDto {
  @ApiProperty({ format: 'uuid', description: 'The point of interest (kept after the point of interest is deleted).' }) poiId: string;
  @ApiProperty({ format: 'date-time', example: EXAMPLE_TIME, description: 'Event time of the first inside position of the stay.' }) arrivedAt: string;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    example: null,
    description: 'Event time of the first outside position after it; null while there, and for good when the shipment closed there.',
  })
  departedAt: string | null;
}

export class VisitPageDto {
  @ApiProperty({ type: [VisitDto] }) items: VisitDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}
