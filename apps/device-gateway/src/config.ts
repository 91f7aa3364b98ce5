import { readFileSync } from 'node:fs';
import { ConfigError, type ConfigOf, env, type Reader, readConfig } from '@tracking/core';
import { checkNatsConfig, natsConfigSchema } from '@tracking/messaging/nats';
import { DEFAULT_READINGS_LIMIT, rateLimitSetting, tenantOverridesSetting } from '@tracking/rate-limit';

/** A port, or 0 for a free one (tests). */
const port = (defaultPort: number) => env.int({ default: defaultPort, min: 0, max: 65535 });

/** A PEM file this process can read, or empty. */
function pemFile(): Reader<string> {
  return (name, raw) => {
    if (raw === undefined || raw === '') return '';
    try {
      readFileSync(raw);
    } catch {
      throw new ConfigError(name, `names a file that cannot be read: ${raw}`);
    }
    return raw;
  };
}

/** The device gateway's environment (docs/configuration.md, "Device gateway"). */
export const deviceGatewayConfigSchema = {
  ...natsConfigSchema,
  /** Where the listeners bind; `0.0.0.0` in containers (trackers connect from anywhere). */
  DEVICE_HOST: env.string({ default: '127.0.0.1' }),
  /** OsmAnd, Traccar Client and our JSON over HTTP(S). */
  DEVICE_HTTP_PORT: port(5055),
  /** MQTT 3.1.1 and 5; `npm start` uses 1884 (Mosquitto holds 1883 on development machines), the tests a free port. */
  DEVICE_MQTT_PORT: port(1883),
  /** MQTT over TLS, when DEVICE_TLS_CERT_FILE and DEVICE_TLS_KEY_FILE are set. */
  DEVICE_MQTTS_PORT: port(8883),
  /** Teltonika Codec 8 / 8 Extended over TCP (over TLS when a certificate is set). */
  DEVICE_TELTONIKA_PORT: port(5027),
  /** With DEVICE_TLS_KEY_FILE: every listener speaks TLS (MQTT on DEVICE_MQTTS_PORT beside the plain port). */
  DEVICE_TLS_CERT_FILE: pemFile(),
  DEVICE_TLS_KEY_FILE: pemFile(),
  /** Readings of many devices gathered into one DMS call: at most this long ... */
  DEVICE_BATCH_MAX_WAIT_MS: env.int({ default: 20, min: 0, max: 10000 }),
  /** ... or this many readings, whichever comes first. */
  DEVICE_BATCH_MAX_READINGS: env.int({ default: 1000, min: 1, max: 5000 }),
  /** DMS calls of one replica in flight at once; while they are out, readings gather into the next batch. */
  DEVICE_BATCH_MAX_IN_FLIGHT: env.int({ default: 4, min: 1, max: 64 }),
  /** Messages per device (an HTTP request, an MQTT publish, a Teltonika packet), per replica. */
  DEVICE_RATE_LIMIT: rateLimitSetting({ default: '10/1s burst 100' }),
  /** Failed authentications per client address, per replica (IMEI or secret guessing); then refused until the budget allows. */
  DEVICE_AUTH_FAILURE_LIMIT: rateLimitSetting({ default: '10/1m burst 20' }),
  /** Open connections per replica over every listener; one more is closed at once. */
  DEVICE_MAX_CONNECTIONS: env.int({ default: 50000, min: 1, max: 1000000 }),
  /** A connection that has not authenticated within this is closed (and an HTTP request not received whole). */
  DEVICE_AUTH_TIMEOUT_MS: env.int({ default: 10000, min: 100, max: 600000 }),
  /** How long an accepted HTTP secret is trusted without asking the DMS again (HTTP authenticates every request). */
  DEVICE_AUTH_CACHE_MS: env.int({ default: 10000, min: 0, max: 60000 }),
  /** How often open connections' credentials are checked; a revoked one is closed within this (at most 60 s). */
  DEVICE_REVOCATION_CHECK_MS: env.int({ default: 30000, min: 100, max: 60000 }),
  /** How long a DMS call may take before its readings count as unacknowledged (the device resends). */
  DEVICE_RPC_TIMEOUT_MS: env.int({ default: 10000, min: 100, max: 120000 }),
  /** The tenant's readings limit, shared with POST /readings through the same Redis bucket. */
  REDIS_URL: env.url({ default: 'redis://127.0.0.1:6379', protocols: ['redis', 'rediss'] }),
  REDIS_KEY_PREFIX: env.keyPrefix({ default: 'tracking:' }),
  REDIS_COMMAND_TIMEOUT_MS: env.int({ default: 250, min: 10, max: 10000 }),
  /** As the gateway reads them: the same defaults and overrides, or the two gateways would disagree on the limit. */
  RATE_LIMIT_READINGS: rateLimitSetting({ default: DEFAULT_READINGS_LIMIT }),
  RATE_LIMIT_TENANT_OVERRIDES: tenantOverridesSetting(),
};

export type DeviceGatewayConfig = ConfigOf<typeof deviceGatewayConfigSchema>;

export function readDeviceGatewayConfig(source?: Record<string, string | undefined>): DeviceGatewayConfig {
  const config = checkNatsConfig(readConfig(deviceGatewayConfigSchema, source));
  if ((config.DEVICE_TLS_CERT_FILE === '') !== (config.DEVICE_TLS_KEY_FILE === '')) {
    throw new ConfigError(config.DEVICE_TLS_CERT_FILE === '' ? 'DEVICE_TLS_CERT_FILE' : 'DEVICE_TLS_KEY_FILE', 'must be set together with its pair');
  }
  return config;
}
