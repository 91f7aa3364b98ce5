import { AsyncLocalStorage } from 'node:async_hooks';

/** What a process knows about the request it is working for, wherever the work happens. */
export interface RequestContext {
  /** The edge's `X-Request-Id`, carried in NATS headers and job data. */
  readonly requestId?: string;
  /**
   * When the caller stops waiting for the answer (epoch ms on this process's clock): the time the NATS
   * request said its caller waits, counted from its sending (`rpcDeadline` in `@tracking/messaging`).
   * Work past it is answered to nobody.
   */
  readonly deadline?: number;
}

const storage = new AsyncLocalStorage<RequestContext>();

/**
 * Runs `work` on behalf of a request: every log line written and every NATS request sent from it,
 * however deep in its async calls, carries the request id. Set by the NATS server for each message
 * and by the bulk-job worker for each job.
 */
export function runInRequestContext<T>(context: RequestContext, work: () => T): T {
  return storage.run(context, work);
}

/** The id of the request the current code works for, if any. */
export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}

/** The deadline of the request the current code works for (epoch ms), if its caller gave one. */
export function currentDeadline(): number | undefined {
  return storage.getStore()?.deadline;
}
