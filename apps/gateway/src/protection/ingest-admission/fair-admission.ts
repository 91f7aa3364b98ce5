/** Why `FairAdmission.run` refused a task: its key's queue was full, or it waited `maxWaitMs` without a slot. */
export class AdmissionRefused extends Error {
  override name = 'AdmissionRefused';

  constructor(readonly reason: 'queue-full' | 'timeout' | 'aborted') {
    super(`admission refused: ${reason}`);
  }
}

export interface FairAdmissionOptions {
  /** Units of work (readings) running at once, whatever their key. */
  capacity: number;
  /** Units of one key running at once (below `capacity`, so that one key never takes it all); also the most one task counts. */
  perKey: number;
  /** Tasks of one key that may wait for a slot; one more is refused at once. */
  queuePerKey: number;
  /** How long a task may wait for a slot before it is refused. */
  maxWaitMs: number;
}

interface Waiter {
  /** Arrival order, to take the oldest waiter among keys that hold as much. */
  order: number;
  cost: number;
  admit: () => void;
}

interface KeyState {
  running: number;
  waiting: Waiter[];
}

/**
 * Fair admission of tasks keyed by a tenant, weighted by each task's cost (its readings; docs/readings.md,
 * "Fair admission"): tasks costing at most `capacity` run at once, at most `perKey` of one key; a task
 * beyond that waits in its key's own queue (at most `queuePerKey` tasks, at most `maxWaitMs`) and is
 * refused otherwise. Freed capacity goes to the key running the least that has a waiter whose cost fits
 * its share (ties: the oldest waiter), so a key that sends little goes before a key that floods, and a
 * flood fills only its own queue. A task counts at most `perKey`, so that any task can run.
 */
export class FairAdmission {
  private running = 0;
  private arrivals = 0;
  /** Keys with running or waiting tasks only: a key is dropped once it has neither. */
  private readonly keys = new Map<string, KeyState>();

  constructor(private readonly options: FairAdmissionOptions) {
    if (options.perKey < 1 || options.capacity < options.perKey) throw new Error('FairAdmission needs 1 <= perKey <= capacity');
  }

  /** Units running now and tasks waiting now, in total. */
  get load(): { running: number; waiting: number } {
    let waiting = 0;
    for (const state of this.keys.values()) waiting += state.waiting.length;
    return { running: this.running, waiting };
  }

  /**
   * Runs `task`, costing `cost` units, once admitted; throws `AdmissionRefused` without running it when
   * refused (or when `signal` aborts the wait).
   */
  async run<T>(key: string, cost: number, task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const units = Math.min(Math.max(1, cost), this.options.perKey);
    await this.admit(key, units, signal);
    try {
      return await task();
    } finally {
      this.release(key, units);
    }
  }

  /**
   * Queues the task behind its key's waiters and hands out what is free (`dispatch`): the task starts at
   * once exactly when it is the one `dispatch` would choose, so a newcomer never passes a waiter that the
   * rules put first. Otherwise it waits, or is refused when its key's queue is full.
   */
  private admit(key: string, cost: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(new AdmissionRefused('aborted'));
    const state = this.keys.get(key) ?? { running: 0, waiting: [] };
    this.keys.set(key, state);
    let admitted = false;
    let wake: (() => void) | undefined;
    const waiter: Waiter = {
      order: this.arrivals++,
      cost,
      admit: () => {
        admitted = true;
        wake?.();
      },
    };
    state.waiting.push(waiter);
    this.dispatch();
    if (admitted) return Promise.resolve();
    if (state.waiting.length > this.options.queuePerKey) {
      state.waiting.splice(state.waiting.indexOf(waiter), 1);
      this.forgetIfIdle(key, state);
      return Promise.reject(new AdmissionRefused('queue-full'));
    }
    return new Promise<void>((resolve, reject) => {
      const leave = (reason: 'timeout' | 'aborted') => {
        const index = state.waiting.indexOf(waiter);
        if (index < 0) return;
        state.waiting.splice(index, 1);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.forgetIfIdle(key, state);
        // The waiter leaving may unblock others behind it (a large head that did not fit yet).
        this.dispatch();
        reject(new AdmissionRefused(reason));
      };
      const onAbort = () => leave('aborted');
      const timer = setTimeout(() => leave('timeout'), this.options.maxWaitMs);
      wake = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }

  private take(state: KeyState, cost: number): void {
    state.running += cost;
    this.running += cost;
  }

  private release(key: string, cost: number): void {
    const state = this.keys.get(key);
    if (state) {
      state.running -= cost;
      this.running -= cost;
      this.forgetIfIdle(key, state);
    }
    this.dispatch();
  }

  /**
   * Hands free capacity to waiters: each time to the key running the least whose oldest waiter fits its
   * share (ties: the oldest waiter). When that waiter does not fit the free capacity yet, nobody else
   * goes before it: it gets the next capacity freed.
   */
  private dispatch(): void {
    for (;;) {
      let best: KeyState | undefined;
      for (const state of this.keys.values()) {
        const head = state.waiting[0];
        if (!head || state.running + head.cost > this.options.perKey) continue;
        if (!best || state.running < best.running || (state.running === best.running && head.order < (best.waiting[0]?.order ?? Infinity))) best = state;
      }
      const waiter = best?.waiting[0];
      if (!best || !waiter || this.running + waiter.cost > this.options.capacity) return;
      best.waiting.shift();
      this.take(best, waiter.cost);
      waiter.admit();
    }
  }

  private forgetIfIdle(key: string, state: KeyState): void {
    if (state.running === 0 && state.waiting.length === 0) this.keys.delete(key);
  }
}
