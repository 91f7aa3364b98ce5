import { ApiPropertyOptional } from '@nestjs/swagger';
import { type OperationFilters, OperationResultStatus, OperationStatus, OperationType } from '@tracking/contracts';
import { PageQuery } from '../paging/page-query.js';
import { enumList, IsEnumList } from '../paging/query-rules.js';

/** The query of `GET /operations`: paging plus the filters `type` and `status` (each one value or a comma list). */
export class ListOperationsQuery extends PageQuery {
  @ApiPropertyOptional({
    description: `One type, or several separated by commas: ${Object.values(OperationType).join(', ')}.`,
    type: 'string',
    example: OperationType.BulkRetire,
  })
  @IsEnumList('type', OperationType)
  type?: string;

  @ApiPropertyOptional({
    description: `One status, or several separated by commas: ${Object.values(OperationStatus).join(', ')}.`,
    type: 'string',
    example: 'Pending,Running',
  })
  @IsEnumList('status', OperationStatus)
  status?: string;

  filters(): OperationFilters {
    return { type: enumList<OperationType>(this.type), status: enumList<OperationStatus>(this.status) };
  }
}

/** The query of `GET /operations/{id}/results`: paging plus the filter `status` (Succeeded or Failed). */
export class ListOperationResultsQuery extends PageQuery {
  @ApiPropertyOptional({ description: 'Succeeded or Failed.', type: 'string', example: 'Failed' })
  @IsEnumList('status', OperationResultStatus)
  status?: string;

  /** The one status asked for; both together are the same as none. */
  resultStatus(): OperationResultStatus | undefined {
    const [status, ...more] = enumList<OperationResultStatus>(this.status) ?? [];
    return more.length > 0 ? undefined : status;
  }
}
