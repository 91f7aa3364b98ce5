import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ErrorCode, MAX_BULK_ENTRIES, OperationResultStatus, OperationStatus, OperationType } from '@tracking/contracts';
import { PageMetadataDto } from '../../http/common.dto.js';

/**
 * The documented shapes of operations and bulk bodies. Bulk bodies are validated by bulk-body.ts (not by
 * class-validator: ten thousand nested objects would cost the gateway's event loop a noticeable pause).
 */

const UUID_EXAMPLE = '0190a4a0-5d2e-7c4b-9f1a-3b2c1d0e9f8a';

export class OperationProgressDto {
  @ApiProperty({ type: 'integer', minimum: 1, maximum: MAX_BULK_ENTRIES, example: 2, description: 'Entries in the request.' }) total: number;
  @ApiProperty({ type: 'integer', minimum: 0, example: 1, description: 'Entries with a result: succeeded + failed.' }) processed: number;
  @ApiProperty({ type: 'integer', minimum: 0, example: 1 }) succeeded: number;
  @ApiProperty({ type: 'integer', minimum: 0, example: 0 }) failed: number;
}

export class OperationDto {
  @ApiProperty({ format: 'uuid', example: UUID_EXAMPLE }) id: string;
  @ApiProperty({ enum: OperationType, enumName: 'OperationType', example: OperationType.BulkSetAssignment }) type: OperationType;
  @ApiProperty({
    enum: OperationStatus,
    enumName: 'OperationStatus',
    example: OperationStatus.Running,
    description:
      'Pending until a worker starts it, Running while it processes entries; then Succeeded (every entry), ' +
      'PartiallySucceeded (some), Failed (none) or Cancelled (by a client, before it finished).',
  })
  status: OperationStatus;
  @ApiProperty({ example: `/v1/accounts/${UUID_EXAMPLE}/operations/${UUID_EXAMPLE}`, description: 'Where to follow it.' }) url: string;
  @ApiProperty({ type: OperationProgressDto }) progress: OperationProgressDto;
  @ApiProperty({ format: 'date-time', example: '2025-11-22T08:30:00.000Z' }) createdAt: string;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2025-11-22T08:30:00.120Z' }) startedAt: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: null }) completedAt: string | null;
}

export class OperationPageDto {
  @ApiProperty({ type: [OperationDto] }) items: OperationDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}

export class EntryErrorDto {
  @ApiProperty({ enum: ErrorCode, enumName: 'ErrorCode', example: ErrorCode.DeviceAlreadyAssigned }) code: ErrorCode;
  @ApiProperty({ example: 'The device is assigned to another shipment; unassign it there first.' }) message: string;
}

export class OperationResultDto {
  @ApiProperty({ type: 'integer', minimum: 0, example: 0, description: "The entry's position in the request, from 0." }) index: number;
  @ApiPropertyOptional({ format: 'uuid', example: UUID_EXAMPLE, description: 'Of a BulkSetAssignment entry.' }) setId?: string;
  @ApiProperty({ format: 'uuid', example: UUID_EXAMPLE }) deviceId: string;
  @ApiProperty({ enum: OperationResultStatus, enumName: 'OperationResultStatus', example: OperationResultStatus.Failed })
  status: OperationResultStatus;
  @ApiProperty({
    type: EntryErrorDto,
    nullable: true,
    description: 'The error the single-entity endpoint would have answered for this entry; null when it succeeded.',
  })
  error: EntryErrorDto | null;
}

export class OperationResultPageDto {
  @ApiProperty({ type: [OperationResultDto] }) items: OperationResultDto[];
  @ApiProperty({ type: PageMetadataDto }) metadata: PageMetadataDto;
}

export class BulkAssignmentEntryDto {
  @ApiProperty({ format: 'uuid', example: UUID_EXAMPLE, description: 'A set of any open shipment of the account.' }) setId: string;
  @ApiProperty({ format: 'uuid', example: UUID_EXAMPLE, description: 'At most once per request.' }) deviceId: string;
}

export class BulkAssignDto {
  @ApiProperty({ type: [BulkAssignmentEntryDto], minItems: 1, maxItems: MAX_BULK_ENTRIES })
  assignments: BulkAssignmentEntryDto[];
}

export class BulkRetireDto {
  @ApiProperty({
    type: [String],
    format: 'uuid',
    minItems: 1,
    maxItems: MAX_BULK_ENTRIES,
    uniqueItems: true,
    example: [UUID_EXAMPLE],
  })
  deviceIds: string[];
}
