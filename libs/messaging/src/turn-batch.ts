/**
 * Work deferred to the end of the event loop's turn (`setImmediate`) and then run together, in the order
 * it was added: what the turn's I/O callbacks produced leaves in one macrotask, so the writes it makes
 * (NATS publishes, which the client flushes once per macrotask) share one system call. Work should not
 * throw; if some does, the rest of the batch still runs, and then the first exception is thrown.
 *
 * Speed machinery (docs/architecture.md, "Speed machinery"): the simple version publishes each message
 * where it is produced. Batching the services' replies cut the NATS server's CPU per request by a third;
 * batching the gateway's requests measured within the noise (docs/benchmark-history.md, "The third round").
 */
export class TurnBatch {
  private pending: (() => void)[] = [];

  add(work: () => void): void {
    if (this.pending.length === 0) setImmediate(() => this.flush());
    this.pending.push(work);
  }

  /** Runs the work added so far (work it adds in turn waits for the next turn). */
  flush(): void {
    const batch = this.pending;
    this.pending = [];
    let failure: { error: unknown } | undefined;
    for (const work of batch) {
      try {
        work();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  }
}
