import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { DATE_TIME_INPUT_DESCRIPTION, IsDateTime } from '../../http/date-time.validator.js';
import { IsOmittable, PageMetadataDto } from '../../http/common.dto.js';

const EXAMPLE_TIME = '2025-11-29T08:30:00.000Z';

export class CreateShareLinkDto {
  @ApiPropertyOptional({
    type: String,
    format: 'date-time',
    example: EXAMPLE_TIME,
    description:
      `When the link stops working: in the future and at most 30 days ahead (else OutOfRange); default 7 days from now. ${DATE_TIME_INPUT_DESCRIPTION}`,
  })
  @IsOmittable()
  @IsDateTime()
  expiresAt?: string;
}

export class ShareLinkDto {
  @ApiProperty({ format: 'uuid', example: '0190a4a0-8a5b-7f7e-8c4d-6e5f4a3b2c1d' }) id: string;
  @ApiProperty({ format: 'date-time', example: EXAMPLE_TIME }) expiresAt: string;
  @ApiProperty({ format: 'date-time', example: '2025-11-22T08:30:00.000Z' }) createdAt: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null, description: 'Set by the first DELETE; the link no longer opens.' })
  revokedAt: string | null;
}

export class CreatedShareLinkDto extends ShareLinkDto {
  @ApiProperty({
    format: 'uri',
    example: 'https://tracking.example.com/track/q3Zr8mVt0PjxW1bYc5LkAg',
    description: 'The link to give the consignee: PUBLIC_BASE_URL + /track/ + a 128-bit random token. Shown in this answer only.',
  })
  url: string;
}

export class ShareLinkPageDto {
  @ApiProperty({ type: [ShareLinkDto] }) items: ShareLinkDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}

class PublicLocationDto {
  @ApiProperty({ example: 51.92 }) lat: number;
  @ApiProperty({ example: 4.48 }) lng: number;
}

export class PublicPlaceDto {
  @ApiProperty({ example: 'Rotterdam DC' }) name: string;
  @ApiProperty({ type: PublicLocationDto }) location: PublicLocationDto;
}

class PublicPositionDto extends PublicLocationDto {
  @ApiProperty({ format: 'date-time', example: EXAMPLE_TIME, description: "The device's clock when it measured the position." }) recordedAt: string;
}

class PublicVisitDto {
  @ApiProperty({ example: 'Rotterdam DC', description: 'The name of the point of interest.' }) name: string;
  @ApiProperty({ format: 'date-time', example: EXAMPLE_TIME }) arrivedAt: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null }) departedAt: string | null;
}

class LineStringDto {
  @ApiProperty({ enum: ['LineString'] }) type: 'LineString';
  @ApiProperty({
    type: 'array',
    items: { type: 'array', items: { type: 'number' }, minItems: 2, maxItems: 2 },
    minItems: 2,
    maxItems: 500,
    description: '[lng, lat] pairs (RFC 7946), oldest first.',
  })
  coordinates: [number, number][];
}

export class PublicTrackingDto {
  @ApiProperty({ example: 'Rotterdam to Lyon' }) name: string;
  @ApiProperty({ example: 'InTransit', description: 'Planned, InTransit, Delivered, Completed or Cancelled.' }) status: string;
  @ApiProperty({ type: PublicPlaceDto, nullable: true }) origin: PublicPlaceDto | null;
  @ApiProperty({ type: PublicPlaceDto, nullable: true }) destination: PublicPlaceDto | null;
  @ApiProperty({ type: PublicPositionDto, nullable: true }) lastPosition: PublicPositionDto | null;
  @ApiProperty({
    type: 'object',
    nullable: true,
    additionalProperties: true,
    description: "The shipment's estimated arrival exactly as GET /shipments/{id} shows it; null when it has none.",
  })
  eta: object | null;
  @ApiProperty({
    type: LineStringDto,
    nullable: true,
    description: "Every position of the shipment's devices in recordedAt order, simplified to at most 500 points; null with fewer than 2.",
  })
  track: LineStringDto | null;
  @ApiProperty({ type: [PublicVisitDto], description: 'Stays at points of interest (the newest 100), in arrival order.' }) visits: PublicVisitDto[];
  @ApiProperty({ format: 'date-time', example: EXAMPLE_TIME, description: 'When anything shown here last changed, positions included.' })
  updatedAt: string;
}
