import { redactWebhook, type Webhook } from '@tracking/contracts';
import type { FastifyRequest } from 'fastify';
import type { Principal } from '../auth/principal.js';
import { isPermitted, Permission } from '../identity/roles.js';

/**
 * Webhook URLs may carry credentials (`?token=...`): callers who manage the account's webhooks (write
 * permission: Admin, Operator) see them whole; anyone else (Viewer) sees them redacted, without user info,
 * query and fragment (`redactWebhookUrl`, docs/webhooks.md, "Who sees the URL").
 */
export function webhookViewFor(request: FastifyRequest, accountId: string): (webhook: Webhook) => Webhook {
  const principal = (request as FastifyRequest & { user?: Principal }).user;
  const whole = principal !== undefined && isPermitted(principal.roleAssignments, accountId.toLowerCase(), Permission.Write);
  return whole ? (webhook) => webhook : redactWebhook;
}

/** The header of the answers that carry a webhook's secret: no cache, shared or private, may keep them. */
export const SECRET_CACHE_CONTROL = 'no-store';
