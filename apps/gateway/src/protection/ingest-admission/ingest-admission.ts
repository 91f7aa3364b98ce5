import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import type { FastifyReply } from 'fastify';
import { Gauge } from 'prom-client';
import type { GatewayConfig } from '../../config.js';
import { GATEWAY_CONFIG } from '../../tokens.js';
import { ProtectionMetrics } from '../protection.metrics.js';
import { AdmissionRefused, FairAdmission } from './fair-admission.js';

/** The `details.policy` of a batch refused by the admission (the readings rate limit's is `readings`). */
export const INGEST_ADMISSION_POLICY = 'ingest-admission';
/** Seconds a refused batch is told to wait: about the time a batch takes to be stored under load. */
const RETRY_AFTER_SECONDS = 1;

/**
 * Fair admission of ingest batches between tenants in this gateway replica (docs/readings.md, "Fair
 * admission"), weighted by their readings: `INGEST_CAPACITY_READINGS` readings being stored at once, at
 * most `INGEST_TENANT_READINGS` of one tenant, the other batches waiting in their tenant's queue
 * (`INGEST_TENANT_QUEUE`, `INGEST_QUEUE_TIMEOUT_MS`);
 * a batch refused gets 429 `RateLimitExceeded` (`details.policy` `ingest-admission`) with `Retry-After`,
 * nothing stored. A client that goes away while its batch waits gives its place up.
 */
@Injectable()
export class IngestAdmission {
  private readonly admission: FairAdmission;

  constructor(
    @Inject(GATEWAY_CONFIG) config: GatewayConfig,
    private readonly metrics: ProtectionMetrics,
  ) {
    this.admission = new FairAdmission({
      capacity: config.INGEST_CAPACITY_READINGS,
      perKey: config.INGEST_TENANT_READINGS,
      queuePerKey: config.INGEST_TENANT_QUEUE,
      maxWaitMs: config.INGEST_QUEUE_TIMEOUT_MS,
    });
    const admission = this.admission;
    new Gauge({
      name: 'gateway_ingest_admission',
      help: 'POST /readings in this gateway replica: readings_running (of admitted batches, being stored), batches_waiting (for room).',
      labelNames: ['state'] as const,
      registers: [metrics.registry],
      collect() {
        const { running, waiting } = admission.load;
        this.set({ state: 'readings_running' }, running);
        this.set({ state: 'batches_waiting' }, waiting);
      },
    });
  }

  /** Readings of the batches running, and batches waiting, in this replica now. */
  get load(): { running: number; waiting: number } {
    return this.admission.load;
  }

  /** Runs `store` once the tenant's batch of `readings` is admitted; refused, throws 429 with Retry-After set on `reply`. */
  async run<T>(tenantId: string, readings: number, reply: FastifyReply, store: () => Promise<T>): Promise<T> {
    const gone = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) gone.abort();
    };
    reply.raw.once('close', onClose);
    try {
      return await this.admission.run(tenantId, readings, store, gone.signal);
    } catch (error) {
      if (!(error instanceof AdmissionRefused)) throw error;
      this.metrics.rateLimited.inc({ policy: INGEST_ADMISSION_POLICY });
      reply.header('Retry-After', String(RETRY_AFTER_SECONDS));
      const why =
        error.reason === 'timeout'
          ? 'waited too long for room'
          : error.reason === 'aborted'
            ? 'was abandoned by the client while it waited'
            : "found its tenant's queue full";
      throw new DomainError(
        ErrorCode.RateLimitExceeded,
        `The tenant has too many batches of readings in progress: this batch ${why}; nothing was stored. Retry after the Retry-After delay.`,
        { policy: INGEST_ADMISSION_POLICY },
      );
    } finally {
      reply.raw.off('close', onClose);
    }
  }
}
