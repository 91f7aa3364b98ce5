import type { RateDecision } from '@tracking/rate-limit';
import type { Policy } from './rate-limit.policies.js';

/**
 * The RateLimit-Policy and RateLimit fields of draft-ietf-httpapi-ratelimit-headers-11 (structured
 * field lists of string items with parameters). A policy says `q` requests per `w` seconds, plus the
 * bucket size as the vendor parameter `tracking-burst`; the current limit says `r` requests are
 * available now and `t` seconds pass before one more is, so within `t` the client can use no more
 * than `r`.
 */
export function policyField(policies: Policy[]): string {
  return policies
    .map(({ name, limit }) => `"${name}";q=${limit.quota};w=${limit.windowSeconds};tracking-burst=${limit.burst}`)
    .join(', ');
}

export function limitField(limits: Array<{ policy: Policy; decision: RateDecision }>): string {
  return limits.map(({ policy, decision }) => `"${policy.name}";r=${decision.remaining};t=${secondsUntil(decision)}`).join(', ');
}

/** Whole seconds until one more request is available, at least 1 (also the 429's Retry-After). */
export function secondsUntil(decision: RateDecision): number {
  return Math.max(1, Math.ceil(decision.msUntilNext / 1000));
}
