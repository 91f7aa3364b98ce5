import { readFileSync } from 'node:fs';
import type { Logger } from '@tracking/core';
import type { DeviceGatewayConfig } from './config.js';
import { httpListener } from './http/http-listener.js';
import type { DeviceMetrics } from './ingest/device-metrics.js';
import type { DeviceAuthenticator, DeviceSink } from './ingest/device-sink.js';
import type { ConnectionBudget, LocalRateLimiter } from './ingest/local-limits.js';

/** What every listener gets: the seam (authenticator and sink) and the protections they share. */
export interface ListenerContext {
  config: DeviceGatewayConfig;
  authenticator: DeviceAuthenticator;
  sink: DeviceSink;
  metrics: DeviceMetrics;
  logger: Logger;
  /** DEVICE_MAX_CONNECTIONS over every listener of this replica. */
  connections: ConnectionBudget;
  /** Failed authentications per client address (`failedAuth.take(address)` after a failure; `allows` before trying). */
  failedAuth: LocalRateLimiter;
  /** The certificate and key when DEVICE_TLS_CERT_FILE and DEVICE_TLS_KEY_FILE are set; every listener then speaks TLS. */
  tls: { cert: Buffer; key: Buffer } | null;
}

/** One protocol's server. */
export interface DeviceListener {
  readonly name: string;
  /** Starts listening; resolves with what it listens on, e.g. `http://127.0.0.1:5055`, for the start-up log and `npm start`. */
  start(): Promise<string[]>;
  /** Stops accepting connections (graceful shutdown, step 1); open ones go on until `close`. */
  stopAccepting(): Promise<void>;
  /** Closes every open connection (graceful shutdown, last step, once the sink has finished its batches). */
  close(): Promise<void>;
}

export type ListenerFactory = (context: ListenerContext) => DeviceListener;

/**
 * Every protocol the device gateway serves. A protocol adds its factory here: the MQTT listener
 * (`src/mqtt/`) and the Teltonika listener (`src/teltonika/`) are registered the same way as HTTP.
 */
export const LISTENERS: ListenerFactory[] = [httpListener];

/** The certificate and key of DEVICE_TLS_*, or null. */
export function readTls(config: DeviceGatewayConfig): ListenerContext['tls'] {
  if (config.DEVICE_TLS_CERT_FILE === '') return null;
  return { cert: readFileSync(config.DEVICE_TLS_CERT_FILE), key: readFileSync(config.DEVICE_TLS_KEY_FILE) };
}
