import { Injectable } from '@nestjs/common';
import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { validate as isUuid } from 'uuid';
import { Authenticator } from '../../auth/authenticator.js';
import { sendError } from '../../http/error.filter.js';
import { ProtectionMetrics } from '../protection.metrics.js';
import { rateLimitAddress } from './client-address.js';
import type { RateDecision } from '@tracking/rate-limit';
import { limitField, policyField, secondsUntil } from './rate-limit.headers.js';
import { PendingAttempts } from './pending-attempts.js';
import { type Policy, RateLimitPolicies } from './rate-limit.policies.js';
import { RateLimiter } from './rate-limiter.service.js';

const TOKEN_ROUTE = '/v1/applications/token';
/** The share links' public view (docs/share-links.md). */
export const PUBLIC_TRACKING_ROUTE = '/v1/public/tracking/:token';
/**
 * How long a token request waits for pending attempts of its failure buckets to settle before it is
 * refused: longer than a full hashing queue takes to drain on a busy machine (16 waiting hashes of about
 * 60 ms on 2 slots, several times over).
 */
const PENDING_WAIT_MS = 5000;

interface Counted {
  policy: Policy;
  decision: RateDecision;
}

/**
 * Rate limiting as Fastify hooks, so it runs for every request before any other work, including
 * those Nest never routes (unknown routes, bodies that fail to parse), and every response carries
 * the RateLimit headers of the policies it was counted under:
 * - a request whose bearer token `Authenticator` accepts counts against its application (`application`,
 *   per-tenant overrides apply), whatever the route; the guard later takes that same verification;
 * - `POST /v1/applications/token` counts against the client address (`token-address`) when it
 *   arrives; then, once the body is parsed and before any secret is hashed, it is checked against the
 *   failure buckets of (address, tenant of the body) and (address, application of the body)
 *   (`token-failures`), which only a 401 charges, just before it is sent: only failed attempts use them
 *   up, and only those from the same address, so nobody elsewhere can spend a good client's budget.
 *   Attempts still running count as possible failures (`PendingAttempts`); a request that finds no room
 *   only because of them waits for their answers rather than being refused for failures that may never
 *   happen (24 good clients started at once got 429s naming `token-failures`: issue 32);
 * - `GET /v1/public/tracking/{token}` counts against the client address under its own policy
 *   (`public-tracking`): a consignee's page polls it, and a flood of guessed tokens stops here;
 * - any other request counts against the client address (`address`);
 * - `/health/live` is not limited (it costs nothing); `/health/ready` is, as any other route: it checks
 *   the databases, NATS and Redis, and probes use the ops port's own.
 */
@Injectable()
export class RateLimitHooks {
  private readonly counted = new WeakMap<FastifyRequest, Counted[]>();
  /** Token requests let past the failure check, until their answer says whether they failed. */
  private readonly attempts = new WeakMap<FastifyRequest, { policy: Policy; subjects: string[] }>();
  private readonly pending = new PendingAttempts();

  constructor(
    private readonly limiter: RateLimiter,
    private readonly policies: RateLimitPolicies,
    private readonly authenticator: Authenticator,
    private readonly metrics: ProtectionMetrics,
  ) {}

  /** Before the routes are added (Nest adds them when the application initializes). */
  register(instance: FastifyInstance): void {
    instance.addHook('onRequest', (request, reply) => this.onRequest(request, reply));
    // The failure check and its settling concern the token route alone, so only its route runs them: as
    // hooks of every route they were four more promises per request on every read.
    instance.addHook('onRoute', (route) => {
      if (route.url !== TOKEN_ROUTE || !methodsOf(route.method).includes('POST')) return;
      addRouteHook(route, 'preHandler', (request: FastifyRequest, reply: FastifyReply) => this.preHandler(request, reply));
      // Before the answer leaves: a client that sends its next attempt as soon as it reads a 401 finds it counted.
      addRouteHook(route, 'onSend', async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
        await this.settleAttempt(request, reply.statusCode === 401 ? reply : undefined);
        return payload;
      });
      // An attempt whose answer never went out (the client went away) settles as no failure.
      addRouteHook(route, 'onResponse', async (request: FastifyRequest) => this.settleAttempt(request, undefined));
      addRouteHook(route, 'onRequestAbort', async (request: FastifyRequest) => this.settleAttempt(request, undefined));
    });
  }

  private async onRequest(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    if (request.routeOptions.url === '/health/live') return undefined;
    const address = rateLimitAddress(request.ip);
    let refused: boolean;
    if (isTokenRoute(request)) {
      refused = await this.count(request, reply, this.policies.tokenAddress(), address);
    } else if (request.routeOptions.url === PUBLIC_TRACKING_ROUTE) {
      // Read without a token, whatever the request carries: counted per address under its own policy.
      refused = await this.count(request, reply, this.policies.publicTracking(), address);
    } else {
      const principal = await this.authenticator.principalOf(request, reply);
      if (principal) refused = await this.count(request, reply, this.policies.application(principal.tenantId), principal.applicationId);
      else refused = await this.count(request, reply, this.policies.address(), address);
    }
    return refused ? reply : undefined;
  }

  /**
   * The token route's failure limit, checked before the secret is (a locked-out address costs no hash):
   * room for the failures counted so far, the attempts pending on this replica ahead of it, and this
   * one. Without room only because of those ahead, it waits for their answers (up to PENDING_WAIT_MS)
   * and looks again; refused with nobody ahead, the bucket is full of real failures: 429.
   * Ids that are not UUIDs name nothing and share one bucket per address.
   */
  private async preHandler(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    if (!isTokenRoute(request)) return undefined;
    const body = request.body as { tenantId?: unknown; applicationId?: unknown } | undefined;
    const tenantId = uuidOrNone(body?.tenantId);
    const address = rateLimitAddress(request.ip);
    const subjects = [`${address}|tenant:${tenantId ?? '-'}`, `${address}|application:${uuidOrNone(body?.applicationId) ?? '-'}`];
    const policy = this.policies.tokenFailures(tenantId);
    const deadline = performance.now() + PENDING_WAIT_MS;
    for (;;) {
      // Counted as pending before the first await, so that concurrent requests each see those ahead of them.
      this.pending.add(subjects);
      const position = this.pending.count(subjects);
      const decision = await this.limiter.peek(policy, subjects, position);
      if (decision.allowed) {
        this.setHeaders(request, reply, policy, { ...decision, remaining: Math.max(0, decision.remaining - position) });
        this.attempts.set(request, { policy, subjects });
        // A client gone while this waited had its abort hook run before there was an attempt to settle.
        if (request.raw.socket.destroyed) await this.settleAttempt(request, undefined);
        return undefined;
      }
      // Refused alone (position 1), the bucket is full: the others waiting learn it at once.
      this.pending.remove(subjects, position === 1);
      const waitMs = deadline - performance.now();
      if (position === 1 || waitMs <= 0) {
        // No room even for this one attempt alone (or waited long enough): the failures are real.
        this.refuse(request, reply, policy, position === 1 ? decision : await this.limiter.peek(policy, subjects));
        return reply;
      }
      // No room only with the attempts ahead of it counted as failures: wait for one of their answers.
      if (this.pending.count(subjects) > 0) await this.pending.settled(waitMs);
    }
  }

  /** Ends a token request's pending attempt once; a 401 (`failed`) is charged to its failure buckets first. */
  private async settleAttempt(request: FastifyRequest, failed: FastifyReply | undefined): Promise<void> {
    const attempt = this.attempts.get(request);
    if (attempt === undefined) return;
    this.attempts.delete(request);
    try {
      if (failed) {
        this.replaceHeaders(request, failed, attempt.policy, await this.limiter.charge(attempt.policy, attempt.subjects));
      }
    } finally {
      this.pending.remove(attempt.subjects);
    }
  }

  /**
   * Charges `cost` readings to the tenant's readings limit for a request already past the hooks (the readings of
   * a batch, once its envelope is parsed) and adds the policy to its RateLimit headers; over the limit,
   * throws 429 RateLimitExceeded with Retry-After, before anything is stored.
   */
  async chargeReadings(request: FastifyRequest, reply: FastifyReply, tenantId: string, cost: number): Promise<void> {
    const policy = this.policies.readings(tenantId);
    const decision = await this.limiter.consume(policy, tenantId, cost);
    this.setHeaders(request, reply, policy, decision);
    if (decision.allowed) return;
    this.metrics.rateLimited.inc({ policy: policy.name });
    reply.header('Retry-After', String(secondsUntil(decision)));
    throw new DomainError(
      ErrorCode.RateLimitExceeded,
      `The batch's ${cost} readings exceed the rate limit "${policy.name}"; nothing was stored. Retry after the Retry-After delay.`,
      { policy: policy.name },
    );
  }

  private setHeaders(request: FastifyRequest, reply: FastifyReply, policy: Policy, decision: RateDecision): void {
    this.writeHeaders(request, reply, [...(this.counted.get(request) ?? []), { policy, decision }]);
  }

  /** The headers again, with `policy`'s entry now at `decision` (a failure charged after the check). */
  private replaceHeaders(request: FastifyRequest, reply: FastifyReply, policy: Policy, decision: RateDecision): void {
    this.writeHeaders(request, reply, (this.counted.get(request) ?? []).map((entry) => (entry.policy.name === policy.name ? { policy, decision } : entry)));
  }

  private writeHeaders(request: FastifyRequest, reply: FastifyReply, counted: Counted[]): void {
    this.counted.set(request, counted);
    reply.header('RateLimit-Policy', policyField(counted.map((entry) => entry.policy)));
    reply.header('RateLimit', limitField(counted));
  }

  /**
   * Counts the request under `policy`, sets the headers, and answers 429 when the bucket is empty (true).
   * A boolean, not the reply: a reply is a thenable, which `await` would wait on until it is sent.
   */
  private async count(request: FastifyRequest, reply: FastifyReply, policy: Policy, subject: string | string[]): Promise<boolean> {
    const decision = await this.limiter.consume(policy, subject);
    if (decision.allowed) {
      this.setHeaders(request, reply, policy, decision);
      return false;
    }
    this.refuse(request, reply, policy, decision);
    return true;
  }

  /** Answers 429 for `policy` with its headers and Retry-After. */
  private refuse(request: FastifyRequest, reply: FastifyReply, policy: Policy, decision: RateDecision): void {
    this.setHeaders(request, reply, policy, decision);
    this.metrics.rateLimited.inc({ policy: policy.name });
    reply.header('Retry-After', String(secondsUntil(decision)));
    sendError(
      reply,
      new DomainError(ErrorCode.RateLimitExceeded, `Too many requests under the rate limit "${policy.name}"; retry after the Retry-After delay.`, {
        policy: policy.name,
      }),
    );
  }
}

function uuidOrNone(value: unknown): string | undefined {
  return typeof value === 'string' && isUuid(value) ? value.toLowerCase() : undefined;
}

function methodsOf(method: string | string[]): string[] {
  return Array.isArray(method) ? method : [method];
}

type RouteHookName = 'preHandler' | 'onSend' | 'onResponse' | 'onRequestAbort';

/** Adds `hook` after the route's own hooks of that name (Fastify takes one function or a list). */
function addRouteHook(route: RouteOptions, name: RouteHookName, hook: (...args: never[]) => unknown): void {
  const existing = (route as unknown as Record<RouteHookName, unknown>)[name];
  const hooks = existing === undefined ? [] : Array.isArray(existing) ? existing : [existing];
  (route as unknown as Record<RouteHookName, unknown>)[name] = [...hooks, hook];
}

function isTokenRoute(request: FastifyRequest): boolean {
  return request.method === 'POST' && request.routeOptions.url === TOKEN_ROUTE;
}
