import { ErrorCode, ParameterIssue } from '@tracking/contracts';
import type { DeviceAuthenticator, DeviceIdentity, DeviceProtocol, DeviceSink, SubmitResult } from '../../apps/device-gateway/src/ingest/device-sink.js';

/**
 * In-process stand-ins for the device gateway's own DeviceAuthenticator and DeviceSink, for the
 * protocol listeners' specs: they replace code of ours (the DMS client and the batcher), not
 * PostgreSQL, NATS or Redis.
 */
export class TestAuthenticator implements DeviceAuthenticator {
  private readonly credentials = new Map<string, { secret: string; identity: DeviceIdentity }>();
  private readonly watchers = new Map<string, Set<() => void>>();
  /** Set to make authenticate() hang or fail. */
  authenticateHook: (() => Promise<void>) | null = null;

  /** Adds an MQTT credential; returns its identity. */
  add(identifier: string, secret: string): DeviceIdentity {
    const identity: DeviceIdentity = { credentialId: `cred-${identifier}`, deviceId: `dev-${identifier}`, accountId: 'acc-1', protocol: 'Mqtt', identifier };
    this.credentials.set(identifier, { secret, identity });
    return identity;
  }

  /** Deletes the credential and tells the watchers of its open connections. */
  revoke(identifier: string): void {
    this.credentials.delete(identifier);
    for (const onRevoked of this.watchers.get(identifier) ?? []) onRevoked();
    this.watchers.delete(identifier);
  }

  watching(identifier: string): number {
    return this.watchers.get(identifier)?.size ?? 0;
  }

  async authenticate(protocol: DeviceProtocol, identifier: string, secret: string | null): Promise<DeviceIdentity | null> {
    if (this.authenticateHook) await this.authenticateHook();
    const credential = this.credentials.get(identifier);
    if (protocol !== 'Mqtt' || !credential || credential.secret !== secret) return null;
    return credential.identity;
  }

  watch(identity: DeviceIdentity, onRevoked: () => void): () => void {
    let set = this.watchers.get(identity.identifier);
    if (!set) this.watchers.set(identity.identifier, (set = new Set()));
    set.add(onRevoked);
    return () => set.delete(onRevoked);
  }
}

export interface Submission {
  identity: DeviceIdentity;
  readings: unknown[];
}

/**
 * Records every submit. By default it commits after `delayMs`, rejecting entries without a string
 * `recordedAt` the way `POST /readings` names a bad field; `next` queues answers (or promises of
 * answers) for the coming submits instead.
 */
export class TestSink implements DeviceSink {
  readonly submissions: Submission[] = [];
  readonly next: (SubmitResult | Promise<SubmitResult>)[] = [];
  /** Resolves the pending waitForSubmissions calls. */
  private waiters: { count: number; resolve: () => void }[] = [];

  constructor(private readonly delayMs = 0) {}

  async submit(identity: DeviceIdentity, readings: unknown[]): Promise<SubmitResult> {
    this.submissions.push({ identity, readings });
    this.waiters = this.waiters.filter((waiter) => (this.submissions.length >= waiter.count ? (waiter.resolve(), false) : true));
    const queued = this.next.shift();
    if (queued) return queued;
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    return commit(readings);
  }

  /** Resolves once `count` submits arrived in all. */
  waitForSubmissions(count: number): Promise<void> {
    if (this.submissions.length >= count) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ count, resolve }));
  }
}

export function commit(readings: unknown[]): SubmitResult {
  const rejected = readings.flatMap((reading, index) =>
    typeof (reading as { recordedAt?: unknown })?.recordedAt === 'string'
      ? []
      : [{ index, error: { code: ErrorCode.InvalidParameter, message: 'recordedAt is required.', details: { field: 'recordedAt', issue: ParameterIssue.Required } } }],
  );
  return { kind: 'committed', outcome: { accepted: readings.length - rejected.length, duplicates: 0, unassigned: 0, rejected } };
}

/** A promise with its resolve function outside, to let a spec decide when the sink answers. */
export function deferred<T>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
