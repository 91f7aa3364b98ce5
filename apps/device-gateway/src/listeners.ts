import { readFileSync } from 'node:fs';
import type { Logger } from '@tracking/core';
import type { DeviceGatewayConfig } from './config.js';
import { httpListener } from './http/http-listener.js';
import { MqttListener } from './mqtt/mqtt-listener.js';
import { DeviceMqttMetrics } from './mqtt/mqtt-metrics.js';
import { TeltonikaListener } from './teltonika/teltonika-listener.js';
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
 * MQTT 3.1.1 and 5 (`src/mqtt/`) on DEVICE_MQTT_PORT, and with TLS configured MQTT over TLS on
 * DEVICE_MQTTS_PORT beside it, sharing the replica's connection budget, failed-authentication limiter
 * and metrics.
 */
export function mqttListener(context: ListenerContext): DeviceListener {
  const { config } = context;
  const listener = new MqttListener(context.authenticator, context.sink, {
    port: config.DEVICE_MQTT_PORT,
    host: config.DEVICE_HOST,
    ...(context.tls ? { tls: { ...context.tls, port: config.DEVICE_MQTTS_PORT } } : {}),
    authDeadlineMs: config.DEVICE_AUTH_TIMEOUT_MS,
    maxConnections: config.DEVICE_MAX_CONNECTIONS,
    connectionSlots: context.connections,
    failedAuthLimiter: context.failedAuth,
    metrics: new DeviceMqttMetrics(context.metrics),
    logger: context.logger.child({ listener: 'mqtt' }),
  });
  return {
    name: 'mqtt',
    async start() {
      const { port, tlsPort } = await listener.start();
      const addresses = [`mqtt://${config.DEVICE_HOST}:${port}`];
      if (tlsPort !== undefined) addresses.push(`mqtts://${config.DEVICE_HOST}:${tlsPort}`);
      return addresses;
    },
    stopAccepting: () => listener.stopAccepting(),
    close: () => listener.close(),
  };
}

/** Teltonika Codec 8 / 8 Extended (`src/teltonika/`) on DEVICE_TELTONIKA_PORT, over TLS when configured. */
export function teltonikaListener(context: ListenerContext): DeviceListener {
  const { config } = context;
  const listener = new TeltonikaListener(context.authenticator, context.sink, {
    port: config.DEVICE_TELTONIKA_PORT,
    host: config.DEVICE_HOST,
    ...(context.tls ? { tls: context.tls } : {}),
    authDeadlineMs: config.DEVICE_AUTH_TIMEOUT_MS,
    maxConnections: config.DEVICE_MAX_CONNECTIONS,
    connectionSlots: context.connections,
    failedAuth: context.failedAuth,
    metrics: context.metrics,
    logger: context.logger.child({ listener: 'teltonika' }),
  });
  return {
    name: 'teltonika',
    async start() {
      const { port } = await listener.start();
      return [`${context.tls ? 'tls' : 'tcp'}://${config.DEVICE_HOST}:${port}`];
    },
    stopAccepting: () => listener.stopAccepting(),
    close: () => listener.close(),
  };
}

/** Every protocol the device gateway serves; a protocol adds its factory here. */
export const LISTENERS: ListenerFactory[] = [httpListener, mqttListener, teltonikaListener];

/** The certificate and key of DEVICE_TLS_*, or null. */
export function readTls(config: DeviceGatewayConfig): ListenerContext['tls'] {
  if (config.DEVICE_TLS_CERT_FILE === '') return null;
  return { cert: readFileSync(config.DEVICE_TLS_CERT_FILE), key: readFileSync(config.DEVICE_TLS_KEY_FILE) };
}
