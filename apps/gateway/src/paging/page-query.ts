import { ApiPropertyOptional } from '@nestjs/swagger';
import { DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT, type PageRequest } from '@tracking/contracts';
import { StrictQuery } from '../http/strict-query.js';
import { IsCursorText, IsPageLimit, IsTrueOrFalse } from './query-rules.js';

const MAX_CURSOR_LENGTH = 512;

/**
 * The paging parameters of every collection (docs/api.md, "Paging"), read with `@Query() query: PageQuery`
 * (or a subclass that adds the collection's filters). The validation pipe checks them in the order the
 * URL gives them, together with its refusal of repeated, unknown and unstorable parameters, and the
 * filters after them; the values stay the strings of the URL until `pageRequest()`.
 */
export class PageQuery extends StrictQuery {
  @ApiPropertyOptional({
    description: 'metadata.nextCursor of the previous page, unchanged, with the same filters; left out for the first page. Opaque.',
    type: 'string',
  })
  @IsCursorText(MAX_CURSOR_LENGTH)
  cursor?: string;

  @ApiPropertyOptional({
    description: 'Records per page, 1 to 100 (OutOfRange otherwise), written as a plain integer (InvalidFormat otherwise).',
    type: 'integer',
    minimum: 1,
    maximum: MAX_PAGE_LIMIT,
    default: DEFAULT_PAGE_LIMIT,
  })
  @IsPageLimit('limit', 1, MAX_PAGE_LIMIT)
  limit?: string;

  @ApiPropertyOptional({
    description: 'true to get metadata.total, the count of every record matching the filters; exactly true or false.',
    type: 'boolean',
    default: false,
  })
  @IsTrueOrFalse('includeTotal')
  includeTotal?: string;

  /** The page asked for; only after the validation pipe has accepted the parameters. */
  pageRequest(): PageRequest {
    const page: PageRequest = {
      limit: this.limit === undefined ? DEFAULT_PAGE_LIMIT : Number(this.limit),
      includeTotal: this.includeTotal === 'true',
    };
    if (this.cursor !== undefined) page.cursor = this.cursor;
    return page;
  }
}
