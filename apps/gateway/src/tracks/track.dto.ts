import { ApiProperty } from '@nestjs/swagger';

export class TrackPointDto {
  @ApiProperty({ format: 'date-time', example: '2026-11-24T08:30:00.000Z', description: "The device's clock." }) recordedAt: string;
  @ApiProperty({ type: Number, minimum: -90, maximum: 90, example: 51.9496 }) lat: number;
  @ApiProperty({ type: Number, minimum: -180, maximum: 180, example: 4.1453 }) lng: number;
  @ApiProperty({ type: Number, nullable: true, example: 12 }) accuracyMeters: number | null;
  @ApiProperty({ format: 'uuid' }) deviceId: string;
}

export class TrackMetadataDto {
  @ApiProperty({ format: 'date-time', nullable: true, description: 'The applied window’s start (the query’s from), null when open.' })
  from: string | null;
  @ApiProperty({ format: 'date-time', nullable: true, description: 'The applied window’s end, exclusive (the query’s to), null when open.' })
  to: string | null;
  @ApiProperty({ type: 'integer', description: 'Points returned.' }) count: number;
  @ApiProperty({ type: 'integer', description: 'Positions in the window before simplification.' }) totalPoints: number;
  @ApiProperty({ description: 'Whether any position was left out to fit maxPoints.' }) simplified: boolean;
}

export class TrackDto {
  @ApiProperty({ format: 'uuid' }) shipmentId: string;
  @ApiProperty({ type: [TrackPointDto], description: 'In recordedAt order (ties by deviceId).' }) points: TrackPointDto[];
  @ApiProperty({ type: TrackMetadataDto }) metadata: TrackMetadataDto;
}

/** The `application/geo+json` answer, as a JSON schema (RFC 7946). */
export const TRACK_GEO_JSON_SCHEMA = {
  type: 'object',
  required: ['type', 'features'],
  properties: {
    type: { type: 'string', enum: ['FeatureCollection'] },
    features: {
      type: 'array',
      description: 'One Feature per device with positions: a LineString, or a Point for a device with one position.',
      items: {
        type: 'object',
        required: ['type', 'geometry', 'properties'],
        properties: {
          type: { type: 'string', enum: ['Feature'] },
          geometry: {
            type: 'object',
            properties: {
              type: { type: 'string', enum: ['LineString', 'Point'] },
              coordinates: { type: 'array', description: '[lng, lat] positions (a Point: one [lng, lat]).', items: {} },
            },
          },
          properties: {
            type: 'object',
            properties: {
              deviceId: { type: 'string', format: 'uuid' },
              recordedAt: { type: 'array', items: { type: 'string', format: 'date-time' }, description: 'Beside the coordinates.' },
              accuracyMeters: { type: 'array', items: { type: 'number', nullable: true }, description: 'Beside the coordinates.' },
            },
          },
        },
      },
    },
  },
} as const;
