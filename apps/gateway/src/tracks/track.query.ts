import { ApiPropertyOptional } from '@nestjs/swagger';
import { DEFAULT_TRACK_POINTS, MAX_TRACK_POINTS, MIN_TRACK_POINTS, ParameterIssue } from '@tracking/contracts';
import { DomainError, parseDateTime } from '@tracking/core';
import { DATE_TIME_INPUT_DESCRIPTION } from '../http/date-time.validator.js';
import { StrictQuery } from '../http/strict-query.js';
import { IsDateTimeFilter, IsPageLimit, IsUuidFilter } from '../paging/query-rules.js';

/** What the query of `GET /shipments/{id}/track` asks for, converted. */
export interface TrackFilters {
  from?: number;
  to?: number;
  deviceId?: string;
  maxPoints: number;
}

/** The query of `GET /shipments/{id}/track` (docs/tracks.md). Not a collection: no cursor, no limit. */
export class TrackQuery extends StrictQuery {
  @ApiPropertyOptional({ description: `Positions recorded at or after this instant. ${DATE_TIME_INPUT_DESCRIPTION}`, type: 'string', format: 'date-time' })
  @IsDateTimeFilter('from')
  from?: string;

  @ApiPropertyOptional({ description: `Positions recorded before this instant (not at it). ${DATE_TIME_INPUT_DESCRIPTION}`, type: 'string', format: 'date-time' })
  @IsDateTimeFilter('to')
  to?: string;

  @ApiPropertyOptional({ description: 'Only this device’s positions (an unknown device gives an empty track).', type: 'string', format: 'uuid' })
  @IsUuidFilter('deviceId')
  deviceId?: string;

  @ApiPropertyOptional({
    description:
      `At most this many points (${MIN_TRACK_POINTS} to ${MAX_TRACK_POINTS}, a plain integer): a longer track is simplified ` +
      "with Douglas-Peucker, one tolerance for every device, keeping each device's first and last point. Above " +
      `max(2000, 4 × maxPoints) positions in the window, Douglas-Peucker runs on a time sample of that many (every point returned ` +
      'is still one of the positions): the cost of a request grows with maxPoints, not with the positions stored.',
    type: 'integer',
    minimum: MIN_TRACK_POINTS,
    maximum: MAX_TRACK_POINTS,
    default: DEFAULT_TRACK_POINTS,
  })
  @IsPageLimit('maxPoints', MIN_TRACK_POINTS, MAX_TRACK_POINTS)
  maxPoints?: string;

  filters(): TrackFilters {
    const filters: TrackFilters = { maxPoints: this.maxPoints === undefined ? DEFAULT_TRACK_POINTS : Number(this.maxPoints) };
    const from = this.from === undefined ? undefined : parseDateTime(this.from)?.getTime();
    const to = this.to === undefined ? undefined : parseDateTime(this.to)?.getTime();
    if (from !== undefined) filters.from = from;
    if (to !== undefined) filters.to = to;
    if (from !== undefined && to !== undefined && to < from) {
      throw DomainError.invalidParameter('to', ParameterIssue.OutOfRange, 'to must not be before from.');
    }
    // Any case is accepted and answered lower-case.
    if (this.deviceId !== undefined) filters.deviceId = this.deviceId.toLowerCase();
    return filters;
  }
}
