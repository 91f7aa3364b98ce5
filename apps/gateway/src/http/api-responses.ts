import { applyDecorators } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiForbiddenResponse,
  ApiHeader,
  ApiNotFoundResponse,
  ApiPreconditionFailedResponse,
  ApiQuery,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { ErrorEnvelopeDto } from './common.dto.js';

/** The answers every account-scoped route can give besides its success. */
export const ApiAccountErrors = () =>
  applyDecorators(
    ApiBadRequestResponse({
      type: ErrorEnvelopeDto,
      description: 'InvalidParameter (a field, or accountId: AccountNotFound) or MalformedRequest.',
    }),
    ApiUnauthorizedResponse({ description: 'Unauthorized: no, expired or invalid bearer token.' }),
    ApiForbiddenResponse({ type: ErrorEnvelopeDto, description: 'Forbidden: the application has no such permission on the account.' }),
  );

/** A 404 with the resource's own code, e.g. `ApiNotFound('ShipmentNotExists: ...')`. */
export const ApiNotFound = (description: string) => ApiNotFoundResponse({ type: ErrorEnvelopeDto, description });

/** The optional `If-Match` header of PATCH and DELETE, and its 412. */
export const ApiIfMatch = () =>
  applyDecorators(
    ApiHeader({ name: 'If-Match', required: false, description: 'ETag from a previous read, or `*`; 412 when stale.' }),
    ApiPreconditionFailedResponse({ type: ErrorEnvelopeDto, description: 'PreconditionFailed: If-Match names another version.' }),
  );

/** The paging parameters of every collection (docs/api.md, "Paging"). */
export const ApiPageQuery = () =>
  applyDecorators(
    ApiQuery({
      name: 'cursor',
      required: false,
      description: 'metadata.nextCursor of the previous page, unchanged, with the same filters; left out for the first page. Opaque.',
      schema: { type: 'string' },
    }),
    ApiQuery({
      name: 'limit',
      required: false,
      description: 'Records per page, 1 to 100 (OutOfRange otherwise), written as a plain integer (InvalidFormat otherwise).',
      schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 },
    }),
    ApiQuery({
      name: 'includeTotal',
      required: false,
      description: 'true to get metadata.total, the count of every record matching the filters; exactly true or false.',
      schema: { type: 'boolean', default: false },
    }),
  );
