import { type CanActivate, Controller, type ExecutionContext, Injectable, RequestMethod, SetMetadata, UseGuards, UseInterceptors } from '@nestjs/common';
// The metadata keys under which Nest's route and parameter decorators record themselves; exported for Nest's own packages.
import { METHOD_METADATA, ROUTE_ARGS_METADATA, RouteParamtypes } from '@nestjs/common/internal';
import type { ModulesContainer } from '@nestjs/core';
import { ErrorCode, ParameterIssue } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyRequest } from 'fastify';
import { IdempotencyInterceptor } from '../protection/idempotency/idempotency.interceptor.js';
import { checkBodyHygiene } from '@tracking/readings';

const IGNORES_QUERY = 'tracking:ignoresQuery';
const API_CONTROLLER = 'tracking:apiController';

/**
 * For a public document fetched by third-party libraries and caches (the JWKS), which may add a
 * query string of their own: the query is ignored rather than refused.
 */
export const IgnoresQuery = () => SetMetadata(IGNORES_QUERY, true);

/** 400 `UnknownField` for the first query parameter of a route that takes none. */
@Injectable()
export class RefusesQueryGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const query = context.switchToHttp().getRequest<FastifyRequest>().query;
    const name = typeof query === 'object' && query !== null ? Object.keys(query)[0] : undefined;
    if (name !== undefined) {
      throw DomainError.invalidParameter(name, ParameterIssue.UnknownField, `${name} is not a parameter of this route.`);
    }
    return true;
  }
}

/**
 * For a route that takes no body (lifecycle actions, DELETEs, cancel, assignment): no body and `{}` pass;
 * a JSON object with fields is 400 `UnknownField` naming the first, as a DTO's unknown field would be;
 * JSON that is not an object is 400 `MalformedRequest`, as on every route with a body.
 */
@Injectable()
export class RefusesBodyGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const body: unknown = context.switchToHttp().getRequest<FastifyRequest>().body;
    if (body === undefined) return true;
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new DomainError(ErrorCode.MalformedRequest, 'The request body must be a JSON object.');
    }
    checkBodyHygiene(body);
    const name = Object.keys(body)[0];
    if (name !== undefined) {
      throw DomainError.invalidParameter(name, ParameterIssue.UnknownField, `${name} is not a field of this request, which takes no body.`);
    }
    return true;
  }
}

/**
 * A controller of the gateway: Nest's `@Controller(path)`, plus the checks every route gets according to
 * its shape, bound to each route here rather than globally.
 * - A route that declares no `@Query()` (and is not `@IgnoresQuery()`) refuses any query parameter: 400
 *   `UnknownField`, as for unknown body fields, rather than quietly ignoring what the client meant
 *   (`?dryRun=true`). A route guard, so it runs after the controller's guards: 401, 400 `AccountNotFound`
 *   and 403 come first, as for every other parameter.
 * - A route that declares no `@Body()` refuses a body with fields (`RefusesBodyGuard`), for the same
 *   reason: `POST .../complete {"force": true}` must not quietly do what it did not ask.
 * - Every POST runs through `IdempotencyInterceptor` (`Idempotency-Key`).
 *
 * Not global enhancers (speed machinery, docs/architecture.md): one global interceptor puts every request,
 * a list included, through Nest's RxJS interceptor chain (docs/benchmark-history.md, "The fourth round").
 * Every controller must be one of these; `assertApiControllers` refuses to start a gateway with another.
 */
export function ApiController(path: string): ClassDecorator {
  return (target) => {
    Controller(path)(target);
    const prototype = target.prototype as Record<string, unknown>;
    for (const name of Object.getOwnPropertyNames(prototype)) {
      const descriptor = Object.getOwnPropertyDescriptor(prototype, name);
      const method: unknown = Reflect.getMetadata(METHOD_METADATA, descriptor?.value ?? {});
      if (descriptor === undefined || method === undefined) continue;
      if (!readsQuery(target, name, descriptor.value as object)) UseGuards(RefusesQueryGuard)(prototype, name, descriptor);
      // Fastify never parses the body of a GET or HEAD, so those routes need no check.
      const takesBody = method !== RequestMethod.GET && method !== RequestMethod.HEAD;
      if (takesBody && !readsArgument(target, name, RouteParamtypes.BODY)) UseGuards(RefusesBodyGuard)(prototype, name, descriptor);
      if (method === RequestMethod.POST) UseInterceptors(IdempotencyInterceptor)(prototype, name, descriptor);
    }
    Reflect.defineMetadata(API_CONTROLLER, true, target);
  };
}

/** Throws unless every controller of the application is an `ApiController`, whose routes have the checks above. */
export function assertApiControllers(modules: ModulesContainer): void {
  for (const module of modules.values()) {
    for (const { metatype } of module.controllers.values()) {
      if (metatype && Reflect.getMetadata(API_CONTROLLER, metatype) !== true) {
        throw new Error(`${metatype.name} is a controller without @ApiController(): its routes would miss the query and idempotency checks.`);
      }
    }
  }
}

/** Whether the route declares `@Query()` (and so parses its query string itself) or ignores it. */
function readsQuery(controller: object, name: string, handler: object): boolean {
  if (Reflect.getMetadata(IGNORES_QUERY, handler) === true) return true;
  return readsArgument(controller, name, RouteParamtypes.QUERY);
}

/** Whether the route declares a parameter decorator of this kind (`@Query()`, `@Body()`). */
function readsArgument(controller: object, name: string, kind: RouteParamtypes): boolean {
  const args: Record<string, unknown> = Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, name) ?? {};
  return Object.keys(args).some((key) => key.startsWith(`${kind}:`));
}
