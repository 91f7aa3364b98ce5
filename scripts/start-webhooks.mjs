// What `npm start` (scripts/start.mjs) sets for webhooks, and what it tells the developer about it; a
// module of its own so that a unit test can check the notice without starting the stack.

/**
 * The WEBHOOK_ALLOW_* values the services get from `npm start`: unset means `true` here (local
 * development: receivers on this machine over http://); anything set is passed on as it is, and the
 * services read it as they always do (only `true` allows; empty is their default, `false`).
 */
export function webhookSettings(env) {
  const insecure = env.WEBHOOK_ALLOW_INSECURE ?? 'true';
  const privateNetworks = env.WEBHOOK_ALLOW_PRIVATE_NETWORKS ?? 'true';
  return { WEBHOOK_ALLOW_INSECURE: insecure, WEBHOOK_ALLOW_PRIVATE_NETWORKS: privateNetworks };
}

/** The line `npm start` prints about webhook targets, saying what the services were actually given. */
export function webhookNotice(env) {
  const settings = webhookSettings(env);
  const insecure = settings.WEBHOOK_ALLOW_INSECURE === 'true';
  const privateNetworks = settings.WEBHOOK_ALLOW_PRIVATE_NETWORKS === 'true';
  if (insecure && privateNetworks) {
    return 'Webhooks may target http:// and local addresses here (WEBHOOK_ALLOW_INSECURE and WEBHOOK_ALLOW_PRIVATE_NETWORKS are true for npm start, false by default).';
  }
  if (insecure) {
    return 'Webhooks may target http:// URLs here (WEBHOOK_ALLOW_INSECURE is true), but not local or private addresses (WEBHOOK_ALLOW_PRIVATE_NETWORKS is not true).';
  }
  if (privateNetworks) {
    return 'Webhooks may target local and private addresses here (WEBHOOK_ALLOW_PRIVATE_NETWORKS is true), over https:// only (WEBHOOK_ALLOW_INSECURE is not true).';
  }
  return 'Webhooks need https:// URLs on public addresses here (neither WEBHOOK_ALLOW_INSECURE nor WEBHOOK_ALLOW_PRIVATE_NETWORKS is true).';
}
