import { accessSync, constants, readFileSync } from 'node:fs';
import {
  type Authenticator,
  connect,
  credsAuthenticator,
  type NatsConnection,
  nkeyAuthenticator,
  type NodeConnectionOptions,
} from '@nats-io/transport-node';
import { ConfigError, type ConfigOf, env, type Reader } from '@tracking/core';

/** A path to a file this process can read, or empty; checked when the configuration is read. */
function readableFile(): Reader<string> {
  return (name, raw) => {
    if (raw === undefined || raw === '') return '';
    try {
      accessSync(raw, constants.R_OK);
    } catch {
      throw new ConfigError(name, `names a file that cannot be read: ${raw}`);
    }
    return raw;
  };
}

/** An inbox prefix: NATS subject tokens of [A-Za-z0-9_-] separated by ".", no wildcard, no trailing dot. */
function inboxPrefix(options: { default: string }): Reader<string> {
  return (name, raw) => {
    const value = raw === undefined || raw === '' ? options.default : raw;
    if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(value)) {
      throw new ConfigError(name, 'must be tokens of [A-Za-z0-9_-] separated by "." (e.g. _INBOX.gateway)');
    }
    return value;
  };
}

/**
 * The NATS variables every process reads: servers, subject prefix, credentials, TLS and reconnection.
 * At most one way to authenticate: user and password, a token, a creds file (JWT and nkey seed) or an
 * nkey seed file. `checkNatsConfig` enforces what one variable alone cannot.
 */
export const natsConfigSchema = {
  NATS_URL: env.string({ default: 'nats://127.0.0.1:4222' }),
  NATS_SUBJECT_PREFIX: env.prefix({ default: '' }),
  NATS_USER: env.string({ default: '' }),
  NATS_PASSWORD: env.string({ default: '' }),
  NATS_TOKEN: env.string({ default: '' }),
  NATS_CREDS_FILE: readableFile(),
  NATS_NKEY_SEED_FILE: readableFile(),
  NATS_TLS_CA_FILE: readableFile(),
  NATS_TLS_CERT_FILE: readableFile(),
  NATS_TLS_KEY_FILE: readableFile(),
  /**
   * Where this process's reply subjects live; the server's permissions let each component subscribe to
   * its own prefix only, so that no component reads the replies meant for another.
   */
  NATS_INBOX_PREFIX: inboxPrefix({ default: '_INBOX' }),
  /** The pause between two reconnection attempts; the attempts go on for as long as the process runs. */
  NATS_RECONNECT_TIME_WAIT_MS: env.int({ default: 2000, min: 10, max: 60000 }),
};

export type NatsConfig = ConfigOf<typeof natsConfigSchema>;

/** Checks the combinations of NATS variables; returns the configuration it was given. */
export function checkNatsConfig<C extends NatsConfig>(config: C): C {
  if ((config.NATS_USER === '') !== (config.NATS_PASSWORD === '')) {
    throw new ConfigError(config.NATS_USER === '' ? 'NATS_USER' : 'NATS_PASSWORD', 'must be set together with NATS_USER and NATS_PASSWORD');
  }
  const methods = [
    config.NATS_USER !== '' && 'NATS_USER',
    config.NATS_TOKEN !== '' && 'NATS_TOKEN',
    config.NATS_CREDS_FILE !== '' && 'NATS_CREDS_FILE',
    config.NATS_NKEY_SEED_FILE !== '' && 'NATS_NKEY_SEED_FILE',
  ].filter((method): method is string => method !== false);
  if (methods.length > 1) {
    throw new ConfigError(methods[1], `cannot be combined with ${methods[0]}: set one way to authenticate to NATS`);
  }
  if ((config.NATS_TLS_CERT_FILE === '') !== (config.NATS_TLS_KEY_FILE === '')) {
    throw new ConfigError(config.NATS_TLS_CERT_FILE === '' ? 'NATS_TLS_CERT_FILE' : 'NATS_TLS_KEY_FILE', 'must be set together with its pair (client certificate and key)');
  }
  return config;
}

/** Outbound bytes nats.js gathers before it writes them at once rather than at the end of the turn. */
const PENDING_LIMIT_BYTES = 1024 * 1024;

/**
 * The options of every NATS connection of the system, named `name` (the server shows it in its
 * connection list). Reconnection never gives up: a NATS outage of any length ends with every process
 * connected again (its subscriptions restored), never with a process that is up but deaf.
 */
export function natsConnectionOptions(config: NatsConfig, name: string): NodeConnectionOptions {
  const options: NodeConnectionOptions = {
    servers: config.NATS_URL.split(','),
    name,
    maxReconnectAttempts: -1,
    reconnectTimeWait: config.NATS_RECONNECT_TIME_WAIT_MS,
    inboxPrefix: config.NATS_INBOX_PREFIX,
    // No stack trace captured per call of nats.js's own `request`, which JetStream's publish and API calls
    // use (the outbox relay publishes each message with it): RequestError and TimeoutError built per
    // publish were 9 % of the DMS's CPU under ingest (speed machinery, docs/architecture.md). The errors
    // keep their types; only their stacks lose the caller's frames.
    noAsyncTraces: true,
  };
  // Speed machinery (docs/architecture.md): nats.js writes its outbound buffer as soon as it holds 32 KiB,
  // which a page of 50 shipments (about 30 KiB of stored JSON since the tracking wave's fields) fills alone,
  // so every reply of a turn went out in its own system call and `TurnBatch` bought nothing. With room for
  // a turn's replies they leave together, flushed once per turn as before. The option is nats.js's own,
  // left out of its type (protocol.ts reads `options.pendingLimit`).
  (options as NodeConnectionOptions & { pendingLimit: number }).pendingLimit = PENDING_LIMIT_BYTES;
  if (config.NATS_USER !== '') Object.assign(options, { user: config.NATS_USER, pass: config.NATS_PASSWORD });
  if (config.NATS_TOKEN !== '') options.token = config.NATS_TOKEN;
  const authenticator = fileAuthenticator(config);
  if (authenticator) options.authenticator = authenticator;
  if (config.NATS_TLS_CA_FILE !== '' || config.NATS_TLS_CERT_FILE !== '') {
    options.tls = {
      ...(config.NATS_TLS_CA_FILE !== '' ? { caFile: config.NATS_TLS_CA_FILE } : {}),
      ...(config.NATS_TLS_CERT_FILE !== '' ? { certFile: config.NATS_TLS_CERT_FILE, keyFile: config.NATS_TLS_KEY_FILE } : {}),
    };
  }
  return options;
}

/** Read at each (re)connection, so that a rotated creds or seed file is used without a restart. */
function fileAuthenticator(config: NatsConfig): Authenticator | undefined {
  if (config.NATS_CREDS_FILE !== '') return credsAuthenticator(() => readFileSync(config.NATS_CREDS_FILE));
  if (config.NATS_NKEY_SEED_FILE !== '') {
    return nkeyAuthenticator(() => new TextEncoder().encode(readFileSync(config.NATS_NKEY_SEED_FILE, 'utf8').trim()));
  }
  return undefined;
}

/** Connects with `natsConnectionOptions` and watches the connection's state (`NatsConnectionState`). */
export async function connectNats(config: NatsConfig, name: string): Promise<NatsConnection> {
  const connection = await connect(natsConnectionOptions(config, name));
  NatsConnectionState.watch(connection);
  return connection;
}

const states = new WeakMap<NatsConnection, NatsConnectionState>();

/**
 * Whether a connection can carry a message now: connected, not disconnected and waiting to reconnect,
 * not closed. Follows the connection's status events; one instance per connection, shared by everything
 * that asks (`NatsConnectionState.of`).
 */
export class NatsConnectionState {
  private up = true;

  private constructor(private readonly connection: NatsConnection) {
    void this.follow();
    void connection.closed().then(() => {
      this.up = false;
    });
  }

  /**
   * Starts watching a connection that has just connected (its status events come from then on).
   * Idempotent.
   */
  static watch(connection: NatsConnection): NatsConnectionState {
    let state = states.get(connection);
    if (!state) {
      state = new NatsConnectionState(connection);
      states.set(connection, state);
    }
    return state;
  }

  /** The state of a connection; `watch` it right after it connects, or a disconnection before this call is missed. */
  static of(connection: NatsConnection): NatsConnectionState {
    return NatsConnectionState.watch(connection);
  }

  /** Connected now: a message published now goes out rather than into the reconnection buffer. */
  get connected(): boolean {
    return this.up && !this.connection.isClosed();
  }

  /** Closed for good: it no longer reconnects (closed by this process, or given up on). */
  get closed(): boolean {
    return this.connection.isClosed();
  }

  private async follow(): Promise<void> {
    for await (const status of this.connection.status()) {
      if (status.type === 'disconnect' || status.type === 'close') this.up = false;
      else if (status.type === 'reconnect') this.up = true;
    }
  }
}

/**
 * The readiness check of a connection: connected, and the server answers a round trip. A connection
 * that is reconnecting fails at once rather than when the probe times out.
 */
export function natsReadinessCheck(...connections: NatsConnection[]): () => Promise<boolean> {
  return async () => {
    for (const connection of connections) {
      if (!NatsConnectionState.of(connection).connected) return false;
    }
    await Promise.all(connections.map((connection) => connection.flush()));
    return true;
  };
}

/** The liveness check of connections: none closed for good (a reconnecting one is alive). */
export function natsLivenessCheck(...connections: NatsConnection[]): () => boolean {
  return () => connections.every((connection) => !connection.isClosed());
}
