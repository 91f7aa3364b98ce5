import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor, SetMetadata } from '@nestjs/common';
// The metadata key and enum under which @Query() records itself; exported for Nest's own packages.
import { ROUTE_ARGS_METADATA, RouteParamtypes } from '@nestjs/common/internal';
import { ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyRequest } from 'fastify';
import type { Observable } from 'rxjs';

const IGNORES_QUERY = 'tracking:ignoresQuery';

/**
 * For a public document fetched by third-party libraries and caches (the JWKS), which may add a
 * query string of their own: the query is ignored rather than refused.
 */
export const IgnoresQuery = () => SetMetadata(IGNORES_QUERY, true);

/** Whether the handler declares `@Query()` (and so parses its query string itself) or ignores it. */
function readsQuery(context: ExecutionContext): boolean {
  if (Reflect.getMetadata(IGNORES_QUERY, context.getHandler()) === true) return true;
  const args: Record<string, unknown> = Reflect.getMetadata(ROUTE_ARGS_METADATA, context.getClass(), context.getHandler().name) ?? {};
  return Object.keys(args).some((key) => key.startsWith(`${RouteParamtypes.QUERY}:`));
}

/**
 * Unknown query parameters are 400 `UnknownField` on every route, as unknown body fields are: a
 * route that takes none (a single resource, a create, an action) refuses any, rather than quietly
 * ignoring what the client meant (`?dryRun=true`). Runs after the guards, so 401, 400
 * `AccountNotFound` and 403 come first, as for every other parameter.
 */
@Injectable()
export class QueryParametersInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() === 'http' && !readsQuery(context)) {
      const query = context.switchToHttp().getRequest<FastifyRequest>().query;
      const name = typeof query === 'object' && query !== null ? Object.keys(query)[0] : undefined;
      if (name !== undefined) {
        throw DomainError.invalidParameter(name, ParameterIssue.UnknownField, `${name} is not a parameter of this route.`);
      }
    }
    return next.handle();
  }
}
