import { Injectable } from '@nestjs/common';
import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { validate as isUuid } from 'uuid';
import { Authenticator } from '../../auth/authenticator.js';
import { sendError } from '../../http/error.filter.js';
import { ProtectionMetrics } from '../protection.metrics.js';
import { rateLimitAddress } from './client-address.js';
import type { RateDecision } from './gcra.script.js';
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
 *   arrives, then, once the body is parsed, against the tenant it names (`token-tenant`);
 * - any other request counts against the client address (`address`);
 * - `/health/live` is not limited (it costs nothing); `/health/ready` is, as any other route: it checks
 *   the databases, NATS and Redis, and probes use the ops port's own.
 */
@Injectable()
export class RateLimitHooks {
  private readonly counted = new WeakMap<FastifyRequest, Counted[]>();

  constructor(
    private readonly limiter: RateLimiter,
    private readonly policies: RateLimitPolicies,
    private readonly authenticator: Authenticator,
    private readonly metrics: ProtectionMetrics,
  ) {}

  register(instance: FastifyInstance): void {
    instance.addHook('onRequest', (request, reply) => this.onRequest(request, reply));
    instance.addHook('preHandler', (request, reply) => this.preHandler(request, reply));
  }

  private async onRequest(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    if (request.routeOptions.url === '/health/live') return undefined;
    const address = rateLimitAddress(request.ip);
    if (isTokenRoute(request)) return this.count(request, reply, this.policies.tokenAddress(), address);
    const principal = await this.authenticator.principalOf(request, reply);
    if (principal) return this.count(request, reply, this.policies.application(principal.tenantId), principal.applicationId);
    return this.count(request, reply, this.policies.address(), address);
  }

  /** The token route's second limit, on the tenant named in the (now parsed) body. */
  private async preHandler(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    if (!isTokenRoute(request)) return undefined;
    const tenantId = (request.body as { tenantId?: unknown } | undefined)?.tenantId;
    // A tenantId that is not a UUID names no tenant: validation or authentication refuses it.
    if (typeof tenantId !== 'string' || !isUuid(tenantId)) return undefined;
    return this.count(request, reply, this.policies.tokenTenant(tenantId), tenantId.toLowerCase());
  }

  /** Counts the request under `policy`, sets the headers, and answers 429 when the bucket is empty. */
  private async count(request: FastifyRequest, reply: FastifyReply, policy: Policy, subject: string): Promise<FastifyReply | undefined> {
    const decision = await this.limiter.consume(policy, subject);
    const counted = [...(this.counted.get(request) ?? []), { policy, decision }];
    this.counted.set(request, counted);
    reply.header('RateLimit-Policy', policyField(counted.map((entry) => entry.policy)));
    const known = counted.filter((entry): entry is { policy: Policy; decision: RateDecision } => entry.decision !== undefined);
    if (known.length > 0) reply.header('RateLimit', limitField(known));
    if (decision === undefined || decision.allowed) return undefined;
    this.metrics.rateLimited.inc({ policy: policy.name });
    reply.header('Retry-After', String(secondsUntil(decision)));
    return sendError(
      reply,
      new DomainError(ErrorCode.RateLimitExceeded, `Too many requests under the rate limit "${policy.name}"; retry after the Retry-After delay.`, {
        policy: policy.name,
      }),
    );
  }
}

function isTokenRoute(request: FastifyRequest): boolean {
  return request.method === 'POST' && request.routeOptions.url === TOKEN_ROUTE;
}
