import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { AccountScope, Conditional } from '@tracking/contracts';
import type { FastifyRequest } from 'fastify';
import { parseIfMatch } from '../http/etag.js';
import type { ResourceIdPipe } from '../http/resource-id.pipe.js';
import { accountScopeOf } from './account-scope.decorator.js';

/** What a write to one resource carries to its service: the account scope, the resource id under `param`, and `If-Match`. */
export type ResourceTarget<K extends string> = AccountScope & Record<K, string> & Conditional;

/**
 * A parameter decorator for the resource a write acts on, from `/v1/accounts/{accountId}/<collection>/{<param>}/...`:
 * the account scope, the id (the resource's own 404 when it is not a UUID, through `idPipe`) and
 * `If-Match` as a version (412 when it names none).
 */
export function resourceTarget<K extends string>(param: K, idPipe: ResourceIdPipe): () => ParameterDecorator {
  return createParamDecorator((_data: unknown, context: ExecutionContext): ResourceTarget<K> => {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const params = request.params as Record<string, string>;
    const id = { [param]: idPipe.transform(params[param] ?? '') } as Record<K, string>;
    return { ...accountScopeOf(request), ...id, expectedVersion: parseIfMatch(request.headers['if-match']) };
  });
}
