import { type ConfigOf, env, readConfig } from '@tracking/core';

export interface OpsDefaults {
  /** gateway 9100, oms 9101, dms 9102, worker 9103 (deploy/k8s names them the `metrics` port). */
  port: number;
  /** Below the Kubernetes grace period of the component, so that the process ends its shutdown itself. */
  shutdownTimeoutMs: number;
}

function opsConfigSchema(defaults: OpsDefaults) {
  return {
    OPS_PORT: env.int({ default: defaults.port, min: 0, max: 65535 }),
    /** Loopback unless told otherwise: containers set OPS_HOST=0.0.0.0 so that probes and Prometheus reach it. */
    OPS_HOST: env.string({ default: '127.0.0.1' }),
    SHUTDOWN_TIMEOUT_MS: env.int({ default: defaults.shutdownTimeoutMs, min: 100, max: 600000 }),
  };
}

export type OpsConfig = ConfigOf<ReturnType<typeof opsConfigSchema>>;

/** The variables every long-running process reads besides its own: the ops port and the shutdown timeout. */
export function readOpsConfig(defaults: OpsDefaults, source?: Record<string, string | undefined>): OpsConfig {
  return readConfig(opsConfigSchema(defaults), source);
}
