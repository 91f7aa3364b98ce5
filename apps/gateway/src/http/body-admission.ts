import { RequestMethod } from '@nestjs/common';
// The metadata keys under which Nest's route decorators record themselves; exported for Nest's own packages.
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/internal';
import type { ModulesContainer } from '@nestjs/core';
import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { checkAccountAccess, methodPermission, requiredPermissionOf } from '../accounts/account-access.guard.js';
import type { Authenticator } from '../auth/authenticator.js';
import type { AccessService } from '../identity/access.service.js';
import type { Permission } from '../identity/roles.js';

/** The routes of an `AccountController`, behind the token and the account checks. */
const ACCOUNT_ROUTE = '/v1/accounts/:accountId';

/**
 * Refuses, before a body is read, every request whose answer does not depend on its body (a `preParsing`
 * hook, after `Authenticator`'s token check, which answers 401 first):
 * - no route for the method and path (an unknown path, another case, a method the path does not take,
 *   such as `POST /health/ready`): 404 `RouteNotFound`;
 * - on an account route, the account checks of `AccountAccessGuard` with the route's own permission
 *   (`@Requires`, else Write): 400 `AccountNotFound` for another tenant's account, 403 `Forbidden`.
 * The guard runs them again after the body (the outcome is the same: the lookups are cached), so routes
 * without a body are checked exactly as before. Node discards the unread body.
 */
export function registerBodyAdmission(
  instance: FastifyInstance,
  modules: ModulesContainer,
  authenticator: Authenticator,
  access: AccessService,
): void {
  const permissions = routePermissions(modules);
  const admit = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (request.is404) throw new DomainError(ErrorCode.RouteNotFound, 'No such route.');
    const route = request.routeOptions.url;
    if (route === ACCOUNT_ROUTE || route?.startsWith(`${ACCOUNT_ROUTE}/`)) {
      const principal = await authenticator.authenticate(request, reply);
      const permission = permissions.get(`${request.method} ${route}`) ?? methodPermission(request.method);
      await checkAccountAccess(access, principal, (request.params as { accountId?: string }).accountId ?? '', permission);
    }
  };
  // A callback hook, so that a request without a body (every read) passes without a promise of its own.
  instance.addHook('preParsing', (request, reply, payload, done) => {
    if (!announcesBody(request)) {
      done(null, payload);
      return;
    }
    admit(request, reply).then(
      () => done(null, payload),
      (error: Error) => done(error),
    );
  });
}

/** Whether the request announces a body (a length above zero, or chunks). */
function announcesBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * `"<METHOD> <route>"` -> the permission of the routes that name their own (`@Requires`), routes as
 * Fastify knows them (`/v1/accounts/:accountId/readings`).
 */
function routePermissions(modules: ModulesContainer): Map<string, Permission> {
  const permissions = new Map<string, Permission>();
  for (const module of modules.values()) {
    for (const { metatype } of module.controllers.values()) {
      if (!metatype) continue;
      const prefixes = pathsOf(Reflect.getMetadata(PATH_METADATA, metatype));
      const prototype = metatype.prototype as Record<string, unknown>;
      for (const name of Object.getOwnPropertyNames(prototype)) {
        const handler = Object.getOwnPropertyDescriptor(prototype, name)?.value as object | undefined;
        const method = handler === undefined ? undefined : (Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined);
        const permission = handler === undefined ? undefined : requiredPermissionOf(handler);
        if (method === undefined || permission === undefined) continue;
        for (const prefix of prefixes) {
          for (const path of pathsOf(Reflect.getMetadata(PATH_METADATA, handler as object))) {
            permissions.set(`${RequestMethod[method]} ${joinPath(prefix, path)}`, permission);
          }
        }
      }
    }
  }
  return permissions;
}

function pathsOf(metadata: unknown): string[] {
  if (Array.isArray(metadata)) return metadata.map(String);
  return [typeof metadata === 'string' ? metadata : ''];
}

/** As Nest joins a controller's path and a method's: one slash between, none at the end. */
function joinPath(prefix: string, path: string): string {
  const joined = `/${prefix}/${path}`.replace(/\/+/g, '/');
  return joined.length > 1 ? joined.replace(/\/$/, '') : joined;
}
