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
/** Seconds a refused batch is told to wait: about the time a slot takes to free up under load. */
const RETRY_AFTER_SECONDS = 1;

/**
 * Fair admission of ingest batches between tenants in this gateway replica (docs/readings.md, "Fair
 * admission"): `INGEST_CONCURRENCY` batches being stored at once, at most `INGEST_TENANT_CONCURRENCY` of
 * one tenant, the rest waiting in their tenant's queue (`INGEST_TENANT_QUEUE`, `INGEST_QUEUE_TIMEOUT_MS`);
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
      capacity: config.INGEST_CONCURRENCY,
      perKey: config.INGEST_TENANT_CONCURRENCY,
      queuePerKey: config.INGEST_TENANT_QUEUE,
      maxWaitMs: config.INGEST_QUEUE_TIMEOUT_MS,
    });
    const admission = this.admission;
    new Gauge({
      name: 'gateway_ingest_batches',
      help: 'POST /readings batches in this gateway replica by state: running (admitted, being stored) or waiting for a slot.',
      labelNames: ['state'] as const,
      registers: [metrics.registry],
      collect() {
        const { running, waiting } = admission.load;
        this.set({ state: 'running' }, running);
        this.set({ state: 'waiting' }, waiting);
      },
    });
  }

  /** Batches running and waiting in this replica now. */
  get load(): { running: number; waiting: number } {
    return this.admission.load;
  }

  /** Runs `store` once the tenant's batch is admitted; refused, throws 429 with Retry-After set on `reply`. */
  async run<T>(tenantId: string, reply: FastifyReply, store: () => Promise<T>): Promise<T> {
    const gone = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) gone.abort();
    };
    reply.raw.once('close', onClose);
    try {
      return await this.admission.run(tenantId, store, gone.signal);
    } catch (error) {
      if (!(error instanceof AdmissionRefused)) throw error;
      this.metrics.rateLimited.inc({ policy: INGEST_ADMISSION_POLICY });
      reply.header('Retry-After', String(RETRY_AFTER_SECONDS));
      const why =
        error.reason === 'timeout'
          ? 'waited too long for a slot'
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
