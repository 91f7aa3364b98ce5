import { applyDecorators } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiForbiddenResponse,
  ApiHeader,
  ApiNotFoundResponse,
  ApiPreconditionFailedResponse,
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
