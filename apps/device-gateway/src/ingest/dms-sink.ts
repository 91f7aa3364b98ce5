import { type DeviceSubmission, type IngestEntry, type RejectedReading, Subjects } from '@tracking/contracts';
import type { Logger } from '@tracking/core';
import type { NatsRpcClient } from '@tracking/messaging/nats';
import { judgeDeviceEntries } from '@tracking/readings';
import type { DeviceMetrics } from './device-metrics.js';
import type { DeviceIdentity, DeviceProtocol, DeviceSink, SubmitResult } from './device-sink.js';
import type { DmsAuthenticator } from './dms-authenticator.js';
import type { LocalRateLimiter } from './local-limits.js';
import type { TenantReadingsLimit } from './tenant-readings-limit.js';

/** The most readings one submit may carry (the seam's bound; a listener keeps to its protocol's own). */
export const MAX_READINGS_PER_SUBMIT = 1000;

export interface DmsSinkOptions {
  rpc: NatsRpcClient;
  authenticator: DmsAuthenticator;
  deviceLimit: LocalRateLimiter;
  tenantLimit: TenantReadingsLimit;
  metrics: DeviceMetrics;
  logger: Logger;
  maxWaitMs: number;
  maxReadings: number;
  /** DMS calls in flight at once; beyond, readings gather into larger batches until one returns. */
  maxInFlight: number;
  rpcTimeoutMs: number;
  /**
   * The protocols whose messages, readings and acknowledgement latency the sink counts (default every
   * one). The MQTT and Teltonika listeners count their own, with outcomes the sink never sees (a payload
   * that is not a reading, a record without a fix) and the latency up to the acknowledgement written;
   * counted here too, each of their messages would be counted twice.
   */
  countedProtocols?: readonly DeviceProtocol[];
}

/** A submit waiting for its batch's commit. */
interface Pending {
  identity: DeviceIdentity;
  tenantId: string;
  entries: IngestEntry[];
  /** Refused by the judgement before the DMS. */
  rejected: RejectedReading[];
  started: number;
  resolve(result: SubmitResult): void;
}

/**
 * `DeviceSink` over the DMS. A submit is judged at once by the same code as `POST /readings`
 * (`judgeDeviceEntries`), charged to the device's message limit, then gathered with other devices'
 * submits into one `dms.readings.ingest-from-devices` call: at most `maxWaitMs` after the first of a
 * batch, or as soon as it holds `maxReadings`; while `maxInFlight` calls are out, readings keep gathering
 * and go in the next call as soon as one returns (a busy DMS gets fewer, larger transactions instead of
 * a queue of small ones: measured with `npm run bench:device-gateway`, about half the throughput without
 * it on a loaded 2-core machine). Each tenant of the batch is charged its readings in the
 * shared Redis bucket first (one call per tenant per batch); a tenant over its limit has its submits
 * answered `limited`, and nothing of them is sent. A submit resolves only once the DMS answered for its
 * batch: `committed` after the commit, `unavailable` when the outcome is unknown (the device resends, and
 * what was stored after all is then a duplicate).
 */
export class DmsSink implements DeviceSink {
  private queue: Pending[] = [];
  private queuedReadings = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();
  private draining = false;
  private readonly counted: ReadonlySet<DeviceProtocol>;

  constructor(private readonly options: DmsSinkOptions) {
    this.counted = new Set(options.countedProtocols ?? ['Http', 'Mqtt', 'Teltonika']);
  }

  async submit(identity: DeviceIdentity, readings: unknown[]): Promise<SubmitResult> {
    const protocol = identity.protocol;
    if (this.draining) return this.count(protocol, { kind: 'unavailable' });
    if (!Array.isArray(readings) || readings.length < 1 || readings.length > MAX_READINGS_PER_SUBMIT) {
      throw new RangeError(`a submit carries 1 to ${MAX_READINGS_PER_SUBMIT} readings, not ${Array.isArray(readings) ? readings.length : 'a non-array'}`);
    }
    const tenantId = this.options.authenticator.tenantOf(identity);
    if (tenantId === undefined) return this.count(protocol, { kind: 'revoked' });
    const wait = this.options.deviceLimit.take(identity.deviceId);
    if (wait > 0) return this.count(protocol, { kind: 'limited', retryAfterSeconds: wait }, 'device-limited');

    const { entries, rejected } = judgeDeviceEntries(readings, identity.deviceId);
    if (entries.length === 0) {
      if (this.counted.has(protocol)) this.options.metrics.readings.inc({ protocol, outcome: 'rejected' }, rejected.length);
      return this.count(protocol, { kind: 'committed', outcome: { accepted: 0, duplicates: 0, unassigned: 0, rejected } });
    }
    return new Promise<SubmitResult>((resolve) => {
      this.enqueue({ identity, tenantId, entries, rejected, started: performance.now(), resolve });
    });
  }

  /** Stops taking submits (they answer `unavailable`), sends what is gathered, and waits for every batch in flight. */
  async drain(): Promise<void> {
    this.draining = true;
    while (this.queue.length > 0 || this.inFlight.size > 0) {
      this.flush();
      await Promise.allSettled([...this.inFlight]);
    }
  }

  private enqueue(pending: Pending): void {
    this.queue.push(pending);
    this.queuedReadings += pending.entries.length;
    if (this.queuedReadings >= this.options.maxReadings) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.options.maxWaitMs);
  }

  /** Sends gathered submits, at most `maxReadings` per call, while fewer than `maxInFlight` calls are out. */
  private flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    while (this.queue.length > 0 && this.inFlight.size < this.options.maxInFlight) {
      let count = 0;
      let taken = 0;
      // At least one submit; no more than `maxReadings` readings otherwise.
      while (taken < this.queue.length && (taken === 0 || count + (this.queue[taken]?.entries.length ?? 0) <= this.options.maxReadings)) {
        count += this.queue[taken]?.entries.length ?? 0;
        taken += 1;
      }
      const batch = this.queue.splice(0, taken);
      this.queuedReadings -= count;
      const sent = this.send(batch).finally(() => {
        this.inFlight.delete(sent);
        // What gathered while this call was out goes now.
        if (this.queue.length > 0) this.flush();
      });
      this.inFlight.add(sent);
    }
  }

  private async send(batch: Pending[]): Promise<void> {
    const admitted = await this.admit(batch);
    if (admitted.length === 0) return;
    const submissions: DeviceSubmission[] = admitted.map((pending) => ({
      tenantId: pending.tenantId,
      accountId: pending.identity.accountId,
      credentialId: pending.identity.credentialId,
      deviceId: pending.identity.deviceId,
      entries: pending.entries,
    }));
    this.options.metrics.batchSize.observe(submissions.reduce((sum, submission) => sum + submission.entries.length, 0));
    let outcomes;
    try {
      ({ outcomes } = await this.options.rpc.call(Subjects.dms.readings.ingestFromDevices, { submissions }, { timeoutMs: this.options.rpcTimeoutMs }));
    } catch (error) {
      this.options.logger.warn({ err: error, submissions: submissions.length }, 'the DMS did not store a batch of device readings; the devices get no acknowledgement');
      for (const pending of admitted) this.resolve(pending, { kind: 'unavailable' });
      return;
    }
    for (const [i, pending] of admitted.entries()) {
      const outcome = outcomes[i];
      if (!outcome || outcome.kind === 'revoked') {
        if (outcome) this.options.authenticator.revoked(pending.identity.credentialId);
        this.resolve(pending, outcome ? { kind: 'revoked' } : { kind: 'unavailable' });
        continue;
      }
      const rejected = [...pending.rejected, ...outcome.rejected].sort((a, b) => a.index - b.index);
      const { protocol } = pending.identity;
      if (this.counted.has(protocol)) {
        this.options.metrics.readings.inc({ protocol, outcome: 'accepted' }, outcome.accepted);
        this.options.metrics.readings.inc({ protocol, outcome: 'duplicate' }, outcome.duplicates);
        this.options.metrics.readings.inc({ protocol, outcome: 'rejected' }, rejected.length);
      }
      this.resolve(pending, { kind: 'committed', outcome: { accepted: outcome.accepted, duplicates: outcome.duplicates, unassigned: outcome.unassigned, rejected } });
    }
  }

  /** Charges each tenant of the batch its readings; answers `limited` to the submits of tenants over their limit. */
  private async admit(batch: Pending[]): Promise<Pending[]> {
    const costs = new Map<string, number>();
    for (const pending of batch) costs.set(pending.tenantId, (costs.get(pending.tenantId) ?? 0) + pending.entries.length);
    const waits = new Map(await Promise.all([...costs].map(async ([tenantId, cost]) => [tenantId, await this.options.tenantLimit.charge(tenantId, cost)] as const)));
    const admitted: Pending[] = [];
    for (const pending of batch) {
      const wait = waits.get(pending.tenantId) ?? 0;
      if (wait > 0) this.resolve(pending, { kind: 'limited', retryAfterSeconds: wait }, 'tenant-limited');
      else admitted.push(pending);
    }
    return admitted;
  }

  private resolve(pending: Pending, result: SubmitResult, outcome?: string): void {
    const { protocol } = pending.identity;
    if (result.kind === 'committed' && this.counted.has(protocol)) this.options.metrics.ackLatency.observe({ protocol }, (performance.now() - pending.started) / 1000);
    pending.resolve(this.count(protocol, result, outcome));
  }

  private count(protocol: DeviceProtocol, result: SubmitResult, outcome: string = result.kind): SubmitResult {
    if (this.counted.has(protocol)) this.options.metrics.messages.inc({ protocol, outcome });
    return result;
  }
}
