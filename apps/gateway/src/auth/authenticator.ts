import { Injectable } from '@nestjs/common';
import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { decodeJwt } from 'jose';
import passport from 'passport';
import { type AccessTokenClaims, bearerToken, JwtStrategy } from './jwt.strategy.js';
import type { Principal } from './principal.js';

/** The routes behind `JwtAuthGuard`: every route of an `AccountController` (`accounts/account-route.decorator.ts`). */
const AUTHENTICATED_PREFIX = '/v1/accounts/';

type AuthenticatedRequest = { user?: Principal; headers: Record<string, string | string[] | undefined> };

/**
 * The one verification of access tokens, for the rate limit (`onRequest`: whose quota a request spends),
 * for the check that runs before a body is read, and for `JwtAuthGuard`. A request is verified at most
 * once: whichever comes first verifies, the others take its outcome (the principal or the refusal), so
 * they cannot disagree on whether a token is valid.
 */
@Injectable()
export class Authenticator {
  private readonly outcomes = new WeakMap<object, Promise<Principal>>();

  constructor(private readonly strategy: JwtStrategy) {}

  /**
   * On the routes that need a token, verifies it before Fastify reads the body: a request without a valid
   * token gets its 401 without its body being read into memory or parsed, whatever its size or content.
   * A `preParsing` hook: the rate limit (`onRequest`) has already verified a token and counted the
   * request; this takes that outcome.
   */
  registerBeforeBody(instance: FastifyInstance): void {
    // A callback hook, so that a request without a body (every read) passes without a promise of its own.
    instance.addHook('preParsing', (request, reply, payload, done) => {
      if (!hasBody(request) || request.routeOptions.url?.startsWith(AUTHENTICATED_PREFIX) !== true) {
        done(null, payload);
        return;
      }
      this.authenticate(request, reply).then(
        () => done(null, payload),
        (error: Error) => done(error),
      );
    });
  }

  /** Sets `request.user` to the principal of the request's token, or throws 401 `Unauthorized`. */
  authenticate(request: AuthenticatedRequest, response: unknown): Promise<Principal> {
    let outcome = this.outcomes.get(request);
    if (outcome === undefined) {
      outcome = this.verify(request, response).then((principal) => (request.user = principal));
      this.outcomes.set(request, outcome);
    }
    return outcome;
  }

  /**
   * The principal of the request's token, or undefined when it has none or `authenticate` refuses it (or
   * fails: the identity database is down); the guard later answers with that same outcome.
   */
  async principalOf(request: AuthenticatedRequest, response: unknown): Promise<Principal | undefined> {
    if (bearerToken(request) === null) return undefined;
    try {
      return await this.authenticate(request, response);
    } catch {
      return undefined;
    }
  }

  private async verify(request: AuthenticatedRequest, response: unknown): Promise<Principal> {
    const token = bearerToken(request);
    const claims = token === null ? undefined : this.strategy.recentlyVerified(token);
    if (claims !== undefined) {
      // Verified a moment ago: only what can change since (the application, its roles) is checked again.
      return principalOrThrow(null, await this.strategy.validate(claims), undefined);
    }
    const principal = await new Promise<Principal>((resolve, reject) => {
      // Passport attaches per-request callbacks to the strategy object it is given: one object per request.
      const strategy = Object.create(this.strategy) as JwtStrategy;
      const authenticate = passport.authenticate(
        strategy,
        { session: false },
        (error: unknown, principal: Principal | false, info: unknown) => {
          try {
            resolve(principalOrThrow(error, principal, info));
          } catch (failure) {
            reject(failure);
          }
        },
      ) as (request: unknown, response: unknown, next: (error?: unknown) => void) => void;
      authenticate(request, response, (error) => reject(error ?? new Error('passport ended without a result')));
    });
    if (token !== null) this.strategy.rememberVerified(token, decodeJwt(token) as AccessTokenClaims);
    return principal;
  }
}

/** Whether the request announces a body (a length above zero, or chunks). */
function hasBody(request: FastifyRequest): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

function principalOrThrow(error: unknown, principal: Principal | false, info: unknown): Principal {
  // Passport reports a rejected token through `info`; `error` is a failure of `validate` itself
  // (the identity database is down), which is ours to answer with a 5xx, not the client's 401.
  if (error) throw error;
  if (!principal) {
    const expired = info instanceof Error && info.name === 'TokenExpiredError';
    throw new DomainError(
      ErrorCode.Unauthorized,
      expired
        ? 'The access token has expired; request a new one at POST /v1/applications/token.'
        : 'A valid access token is required: send Authorization: Bearer <accessToken>.',
    );
  }
  return principal;
}
