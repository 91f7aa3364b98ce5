import { Injectable } from '@nestjs/common';
import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { validate as isUuid } from 'uuid';
import { Authenticator } from '../../auth/authenticator.js';
import { sendError } from '../../http/error.filter.js';
import { ProtectionMetrics } from '../protection.metrics.js';
import { rateLimitAddress } from './client-address.js';
import type { RateDecision } from '@tracking/rate-limit';
import { limitField, policyField, secondsUntil } from './rate-limit.headers.js';
import { type Policy, RateLimitPolicies } from './rate-limit.policies.js';
import { RateLimiter } from './rate-limiter.service.js';

const TOKEN_ROUTE = '/v1/applications/token';

interface Counted {
  policy: Policy;
  /** Undefined when Redis did not answer and the request passed uncounted. */
  decision: RateDecision | undefined;
}

/**
 * Rate limiting as Fastify hooks, so it runs for every request before any other work, including
 * those Nest never routes (unknown routes, bodies that fail to parse), and every response carries
 * the RateLimit headers of the policies it was counted under:
 * - a request whose bearer token `Authenticator` accepts counts against its application (`application`,
 *   per-tenant overrides apply), whatever the route; the guard later takes that same verification;
 * - `POST /v1/applications/token` counts against the client address (`token-address`) when it
 *   arrives; then, once the body is parsed and before any secret is hashed, against the failure
 *   buckets of (address, tenant of the body) and (address, application of the body)
 *   (`token-failures`). Unless the answer is 401, the failure buckets get that request back: only
 *   failed attempts use them up, and only those from the same address, so nobody elsewhere can spend
 *   a good client's budget;
 * - any other request counts against the client address (`address`);
 * - `/health/live` is not limited (it costs nothing); `/health/ready` is, as any other route: it checks
 *   the databases, NATS and Redis, and probes use the ops port's own.
 */
@Injectable()
export class RateLimitHooks {
  private readonly counted = new WeakMap<FastifyRequest, Counted[]>();
  /** Token requests charged to failure buckets, until their answer says whether they failed. */
  private readonly failureCharges = new WeakMap<FastifyRequest, { policy: Policy; subjects: string[] }>();

  constructor(
    private readonly limiter: RateLimiter,
    private readonly policies: RateLimitPolicies,
    private readonly authenticator: Authenticator,
    private readonly metrics: ProtectionMetrics,
  ) {}

  register(instance: FastifyInstance): void {
    instance.addHook('onRequest', (request, reply) => this.onRequest(request, reply));
    instance.addHook('preHandler', (request, reply) => this.preHandler(request, reply));
    instance.addHook('onResponse', (request, reply) => this.onResponse(request, reply));
  }

  private async onRequest(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    if (request.routeOptions.url === '/health/live') return undefined;
    const address = rateLimitAddress(request.ip);
    let refused: boolean;
    if (isTokenRoute(request)) {
      refused = await this.count(request, reply, this.policies.tokenAddress(), address);
    } else {
      const principal = await this.authenticator.principalOf(request, reply);
      if (principal) refused = await this.count(request, reply, this.policies.application(principal.tenantId), principal.applicationId);
      else refused = await this.count(request, reply, this.policies.address(), address);
    }
    return refused ? reply : undefined;
  }

  /**
   * The token route's failure limit, charged before the secret is checked (a locked-out address costs
   * no hash) and given back once the answer is not a 401. Ids that are not UUIDs name nothing and
   * share one bucket per address.
   */
  private async preHandler(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    if (!isTokenRoute(request)) return undefined;
    const body = request.body as { tenantId?: unknown; applicationId?: unknown } | undefined;
    const tenantId = uuidOrNone(body?.tenantId);
    const address = rateLimitAddress(request.ip);
    const subjects = [`${address}|tenant:${tenantId ?? '-'}`, `${address}|application:${uuidOrNone(body?.applicationId) ?? '-'}`];
    const policy = this.policies.tokenFailures(tenantId);
    if (await this.count(request, reply, policy, subjects)) return reply;
    this.failureCharges.set(request, { policy, subjects });
    return undefined;
  }

  private async onResponse(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const charge = this.failureCharges.get(request);
    if (charge === undefined || reply.statusCode === 401) return;
    await this.limiter.refund(charge.policy, charge.subjects);
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
    if (decision === undefined || decision.allowed) return;
    this.metrics.rateLimited.inc({ policy: policy.name });
    reply.header('Retry-After', String(secondsUntil(decision)));
    throw new DomainError(
      ErrorCode.RateLimitExceeded,
      `The batch's ${cost} readings exceed the rate limit "${policy.name}"; nothing was stored. Retry after the Retry-After delay.`,
      { policy: policy.name },
    );
  }

  private setHeaders(request: FastifyRequest, reply: FastifyReply, policy: Policy, decision: RateDecision | undefined): void {
    const counted = [...(this.counted.get(request) ?? []), { policy, decision }];
    this.counted.set(request, counted);
    reply.header('RateLimit-Policy', policyField(counted.map((entry) => entry.policy)));
    const known = counted.filter((entry): entry is { policy: Policy; decision: RateDecision } => entry.decision !== undefined);
    if (known.length > 0) reply.header('RateLimit', limitField(known));
  }

  /**
   * Counts the request under `policy`, sets the headers, and answers 429 when the bucket is empty (true).
   * A boolean, not the reply: a reply is a thenable, which `await` would wait on until it is sent.
   */
  private async count(request: FastifyRequest, reply: FastifyReply, policy: Policy, subject: string | string[]): Promise<boolean> {
    const decision = await this.limiter.consume(policy, subject);
    this.setHeaders(request, reply, policy, decision);
    if (decision === undefined || decision.allowed) return false;
    this.metrics.rateLimited.inc({ policy: policy.name });
    reply.header('Retry-After', String(secondsUntil(decision)));
    sendError(
      reply,
      new DomainError(ErrorCode.RateLimitExceeded, `Too many requests under the rate limit "${policy.name}"; retry after the Retry-After delay.`, {
        policy: policy.name,
      }),
    );
    return true;
  }
}

function uuidOrNone(value: unknown): string | undefined {
  return typeof value === 'string' && isUuid(value) ? value.toLowerCase() : undefined;
}

function isTokenRoute(request: FastifyRequest): boolean {
  return request.method === 'POST' && request.routeOptions.url === TOKEN_ROUTE;
}
