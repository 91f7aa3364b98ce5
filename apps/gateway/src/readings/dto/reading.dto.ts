import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ErrorCode, MAX_READINGS_PER_BATCH, READING_VALUES } from '@tracking/contracts';
import { ErrorDetailsDto, PageMetadataDto } from '../../http/common.dto.js';

/** The bounds of a measurement, from the one list the validation also reads. */
function bounds(field: (typeof READING_VALUES)[number]['field']) {
  const value = READING_VALUES.find((candidate) => candidate.field === field);
  return { minimum: value?.min, maximum: value?.max };
}

const NULLABLE_NUMBER = { type: Number, nullable: true } as const;

export class ReadingLocationDto {
  @ApiProperty({ type: Number, ...bounds('location.lat'), example: 51.9496, description: 'Latitude, WGS 84 degrees.' }) lat: number;
  @ApiProperty({ type: Number, ...bounds('location.lng'), example: 4.1453, description: 'Longitude, WGS 84 degrees.' }) lng: number;
  @ApiPropertyOptional({ ...NULLABLE_NUMBER, ...bounds('location.accuracyMeters'), example: 12 }) accuracyMeters: number | null;
  @ApiPropertyOptional({ ...NULLABLE_NUMBER, ...bounds('location.altitudeMeters'), example: 3.5 }) altitudeMeters: number | null;
  @ApiPropertyOptional({ ...NULLABLE_NUMBER, ...bounds('location.speedMps'), example: 13.9, description: 'Metres per second.' })
  speedMps: number | null;
  @ApiPropertyOptional({ ...NULLABLE_NUMBER, ...bounds('location.headingDegrees'), example: 270, description: 'Degrees clockwise from north.' })
  headingDegrees: number | null;
}

/** The measurements every reading may carry, all nullable. */
class MeasurementsDto {
  @ApiPropertyOptional({ type: ReadingLocationDto, nullable: true, description: 'lat and lng together, or null.' })
  location: ReadingLocationDto | null;
  @ApiPropertyOptional({ ...NULLABLE_NUMBER, ...bounds('temperatureC'), example: 4.2 }) temperatureC: number | null;
  @ApiPropertyOptional({ ...NULLABLE_NUMBER, ...bounds('humidityPercent'), example: 61 }) humidityPercent: number | null;
  @ApiPropertyOptional({ ...NULLABLE_NUMBER, ...bounds('shockG'), example: 0.4 }) shockG: number | null;
  @ApiPropertyOptional({ ...NULLABLE_NUMBER, ...bounds('lightLux'), example: 0 }) lightLux: number | null;
  @ApiPropertyOptional({ ...NULLABLE_NUMBER, ...bounds('batteryPercent'), example: 87 }) batteryPercent: number | null;
  @ApiPropertyOptional({ ...NULLABLE_NUMBER, ...bounds('pressureHpa'), example: 1013.2 }) pressureHpa: number | null;
}

export class ReadingDto extends MeasurementsDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty({ format: 'uuid' }) deviceId: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-24T08:30:00.000Z', description: "The device's clock." }) recordedAt: string;
  @ApiProperty({ format: 'date-time', example: '2026-11-24T08:30:02.114Z', description: 'When the server stored it.' }) receivedAt: string;
}

export class ReadingPageDto {
  @ApiProperty({ type: [ReadingDto] }) readings: ReadingDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}

export class ReadingInputDto extends MeasurementsDto {
  @ApiPropertyOptional({ format: 'uuid', description: 'The device; exactly one of deviceId and serialNumber.' }) deviceId?: string;
  @ApiPropertyOptional({ minLength: 1, maxLength: 100, description: 'The device by its serial number, instead of deviceId.' })
  serialNumber?: string;
  @ApiProperty({
    format: 'date-time',
    example: '2026-11-24T08:30:00Z',
    description:
      "The device's clock: RFC 3339 with a time zone, kept to the millisecond; at most 5 minutes ahead of the server and not " +
      'older than the retention (OutOfRange). With the device, the key of the reading.',
  })
  recordedAt: string;
}

export class IngestReadingsDto {
  @ApiProperty({ type: [ReadingInputDto], minItems: 1, maxItems: MAX_READINGS_PER_BATCH }) readings: ReadingInputDto[];
}

class RejectedErrorDto {
  @ApiProperty({ enum: ErrorCode, enumName: 'ErrorCode', example: ErrorCode.InvalidParameter }) code: ErrorCode;
  @ApiProperty({ example: 'readings.17.temperatureC must be at most 150.' }) message: string;
  @ApiPropertyOptional({ type: ErrorDetailsDto }) details?: ErrorDetailsDto;
}

export class RejectedReadingDto {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'The position of the entry in `readings`.' }) index: number;
  @ApiProperty({
    type: RejectedErrorDto,
    description:
      `${ErrorCode.InvalidParameter} (details.field such as readings.17.temperatureC; issue Required, InvalidFormat, OutOfRange, ` +
      `UnknownField, ReadOnly, ConflictingReading), ${ErrorCode.DeviceNotExists}, ${ErrorCode.DeviceRetired}. No id.`,
  })
  error: RejectedErrorDto;
}

export class IngestResultDto {
  @ApiProperty({ type: 'integer', minimum: 0, description: 'Readings stored by this request.' }) accepted: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Entries repeating a stored reading (or an earlier entry) with the same content: stored once, not again.',
  })
  duplicates: number;
  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description:
      'Of the accepted readings, those recorded while their device was on no shipment (before its assignment, after its ' +
      'release, or never assigned): stored, and they update the device, but reach no track, visit or alert.',
  })
  unassigned: number;
  @ApiProperty({ type: [RejectedReadingDto], description: 'Entries refused, in index order.' }) rejected: RejectedReadingDto[];
}
