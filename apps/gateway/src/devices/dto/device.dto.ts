import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { DeviceStatus, type Metadata } from '@tracking/contracts';
import { Type } from 'class-transformer';
import { IsDefined, IsNumber, IsObject, IsOptional, IsString, Length, Matches, Max, Min, ValidateNested } from 'class-validator';
import { DATE_TIME_INPUT_DESCRIPTION, IsDateTime } from '../../http/date-time.validator.js';
import { IsMetadata } from '../../http/metadata.validator.js';
import { FINITE, GeoPointDto, IsOmittable, METADATA_SCHEMA, PageMetadataDto } from '../../http/common.dto.js';
import { IsReadOnly } from '../../http/validation.js';
import { HasVisibleText } from '../../http/visible-text.validator.js';

/** No white space at either end (an empty string passes, for the length rule to report). */
const NO_OUTER_SPACE = /^(?:\S(?:[\s\S]*\S)?)?$/;

const SERIAL_NUMBER = {
  minLength: 1,
  maxLength: 100,
  example: 'TRK-2025-000481',
  description: 'Unique within the tenant, across its accounts; exact and case-sensitive, without white space at either end.',
} as const;
const MODEL = { minLength: 1, maxLength: 100, example: 'TempTrack T4' } as const;
const FIRMWARE_VERSION = { type: String, nullable: true, minLength: 1, maxLength: 50, example: '4.2.1' } as const;
const BATTERY_LEVEL = { type: Number, nullable: true, minimum: 0, maximum: 100, example: 87.5, description: 'Percent.' } as const;
const LAST_SEEN_AT = { type: String, format: 'date-time', nullable: true, example: '2025-11-22T08:30:00.000Z' } as const;
const LAST_LOCATION = { type: GeoPointDto, nullable: true, description: 'Both coordinates together, or null.' } as const;

/** Where the device last was: its newest reading with a location (by recordedAt), or what a client set. */
export class LastLocationDto extends GeoPointDto {
  @ApiProperty({ type: Number, nullable: true, minimum: 0, maximum: 100000, example: 12, description: 'From the reading; null when a client set it.' })
  accuracyMeters: number | null;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    example: '2025-11-22T08:30:00.000Z',
    description: "The reading's recordedAt; for a position a client set, when it was set.",
  })
  recordedAt: string | null;
}

export class DeviceDto {
  @ApiProperty({ format: 'uuid', example: '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8a' }) id: string;
  @ApiProperty(SERIAL_NUMBER) serialNumber: string;
  @ApiProperty(MODEL) model: string;
  @ApiProperty({
    enum: DeviceStatus,
    enumName: 'DeviceStatus',
    example: DeviceStatus.Available,
    description: 'Available when registered; Assigned while linked to a shipment; Retired for good.',
  })
  status: DeviceStatus;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The shipment it is assigned to; set by assignment only.' })
  shipmentId: string | null;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The set it is assigned to; set by assignment only.' })
  setId: string | null;
  @ApiProperty(FIRMWARE_VERSION) firmwareVersion: string | null;
  @ApiProperty(BATTERY_LEVEL) batteryLevel: number | null;
  @ApiProperty(LAST_SEEN_AT) lastSeenAt: string | null;
  @ApiProperty({
    type: LastLocationDto,
    nullable: true,
    description: 'Moved by readings (the newest by recordedAt wins; a late, older one does not move it back) and by clients.',
  })
  lastLocation: LastLocationDto | null;
  @ApiProperty(METADATA_SCHEMA) metadata: Metadata;
  @ApiProperty({ format: 'date-time', example: '2025-11-22T08:30:00.000Z' }) createdAt: string;
  @ApiProperty({ format: 'date-time', example: '2025-11-22T08:30:00.000Z' }) updatedAt: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null }) retiredAt: string | null;
}

export class DevicePageDto {
  @ApiProperty({ type: [DeviceDto] }) devices: DeviceDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}

/** The fields every device body may set; `null` clears the nullable ones. `metadata` is replaced whole. */
class DeviceFieldsDto {
  @ApiPropertyOptional(FIRMWARE_VERSION)
  @IsOptional()
  @IsString()
  @Length(1, 50)
  firmwareVersion?: string | null;

  @ApiPropertyOptional(BATTERY_LEVEL)
  @IsOptional()
  @IsNumber(FINITE)
  @Min(0)
  @Max(100)
  batteryLevel?: number | null;

  @ApiPropertyOptional({ ...LAST_SEEN_AT, description: DATE_TIME_INPUT_DESCRIPTION })
  @IsOptional()
  @IsDateTime()
  lastSeenAt?: string | null;

  @ApiPropertyOptional(LAST_LOCATION)
  @IsOptional()
  @IsObject()
  @ValidateNested()
  @Type(() => GeoPointDto)
  lastLocation?: GeoPointDto | null;

  @ApiPropertyOptional({ ...METADATA_SCHEMA, description: `Replaces the whole metadata object. ${METADATA_SCHEMA.description}` })
  @IsOmittable()
  @IsMetadata()
  metadata?: Metadata;
}

/** A device to register; it starts Available. */
export class CreateDeviceDto extends DeviceFieldsDto {
  @ApiProperty(SERIAL_NUMBER)
  @IsDefined()
  @IsString()
  @Matches(NO_OUTER_SPACE, { message: 'serialNumber must not begin or end with white space' })
  @Length(1, 100)
  @HasVisibleText()
  serialNumber: string;

  @ApiProperty(MODEL)
  @IsDefined()
  @IsString()
  @Length(1, 100)
  @HasVisibleText()
  model: string;
}

/** Any subset of the fields; the serial number is fixed once registered (ReadOnly). */
export class UpdateDeviceDto extends DeviceFieldsDto {
  @IsReadOnly()
  serialNumber?: never;

  @ApiPropertyOptional(MODEL)
  @IsOmittable()
  @IsString()
  @Length(1, 100)
  @HasVisibleText()
  model?: string;
}
