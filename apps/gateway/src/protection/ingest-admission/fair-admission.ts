/** Why `FairAdmission.run` refused a task: its key's queue was full, or it waited `maxWaitMs` without a slot. */
export class AdmissionRefused extends Error {
  override name = 'AdmissionRefused';

  constructor(readonly reason: 'queue-full' | 'timeout' | 'aborted') {
    super(`admission refused: ${reason}`);
  }
}

export interface FairAdmissionOptions {
  /** Tasks running at once, whatever their key. */
  capacity: number;
  /** Tasks of one key running at once (below `capacity`, so that one key never takes every slot). */
  perKey: number;
  /** Tasks of one key that may wait for a slot; one more is refused at once. */
  queuePerKey: number;
  /** How long a task may wait for a slot before it is refused. */
  maxWaitMs: number;
}

interface Waiter {
  /** Arrival order, to take the oldest waiter among keys that hold as many slots. */
  order: number;
  admit: () => void;
}

interface KeyState {
  running: number;
  waiting: Waiter[];
}

/**
 * Fair admission of tasks keyed by a tenant (docs/readings.md, "Fair admission"): at most `capacity`
 * tasks run at once, at most `perKey` of one key; a task beyond that waits in its key's own queue (at
 * most `queuePerKey`, at most `maxWaitMs`) and is refused otherwise. A freed slot goes to the key with
 * the fewest running tasks that has a waiter (ties: the oldest waiter), so a key that sends little gets
 * the next slot before a key that floods, and a flood fills only its own queue.
 */
export class FairAdmission {
  private running = 0;
  private arrivals = 0;
  /** Keys with running or waiting tasks only: a key is dropped once it has neither. */
  private readonly keys = new Map<string, KeyState>();

  constructor(private readonly options: FairAdmissionOptions) {
    if (options.perKey < 1 || options.capacity < options.perKey) throw new Error('FairAdmission needs 1 <= perKey <= capacity');
  }

  /** Tasks running now and waiting now, in total. */
  get load(): { running: number; waiting: number } {
    let waiting = 0;
    for (const state of this.keys.values()) waiting += state.waiting.length;
    return { running: this.running, waiting };
  }

  /** Runs `task` once admitted; throws `AdmissionRefused` without running it when refused (or when `signal` aborts the wait). */
  async run<T>(key: string, task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    await this.admit(key, signal);
    try {
      return await task();
    } finally {
      this.release(key);
    }
  }

  private admit(key: string, signal?: AbortSignal): Promise<void> {
    const state = this.keys.get(key) ?? { running: 0, waiting: [] };
    this.keys.set(key, state);
    if (state.waiting.length === 0 && state.running < this.options.perKey && this.running < this.options.capacity) {
      this.take(state);
      return Promise.resolve();
    }
    if (state.waiting.length >= this.options.queuePerKey || signal?.aborted) {
      this.forgetIfIdle(key, state);
      return Promise.reject(new AdmissionRefused(signal?.aborted ? 'aborted' : 'queue-full'));
    }
    return new Promise<void>((resolve, reject) => {
      const leave = (reason: 'timeout' | 'aborted') => {
        const index = state.waiting.indexOf(waiter);
        if (index < 0) return;
        state.waiting.splice(index, 1);
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        this.forgetIfIdle(key, state);
        reject(new AdmissionRefused(reason));
      };
      const onAbort = () => leave('aborted');
      const timer = setTimeout(() => leave('timeout'), this.options.maxWaitMs);
      const waiter: Waiter = {
        order: this.arrivals++,
        admit: () => {
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      state.waiting.push(waiter);
    });
  }

  private take(state: KeyState): void {
    state.running++;
    this.running++;
  }

  private release(key: string): void {
    const state = this.keys.get(key);
    if (state) {
      state.running--;
      this.running--;
      this.forgetIfIdle(key, state);
    }
    this.dispatch();
  }

  /** Hands free slots to waiters: each to the key holding the fewest slots that may take one (ties: the oldest waiter). */
  private dispatch(): void {
    while (this.running < this.options.capacity) {
      let best: KeyState | undefined;
      for (const state of this.keys.values()) {
        const head = state.waiting[0];
        if (!head || state.running >= this.options.perKey) continue;
        if (!best || state.running < best.running || (state.running === best.running && head.order < (best.waiting[0]?.order ?? Infinity))) best = state;
      }
      const waiter = best?.waiting.shift();
      if (!best || !waiter) return;
      this.take(best);
      waiter.admit();
    }
  }

  private forgetIfIdle(key: string, state: KeyState): void {
    if (state.running === 0 && state.waiting.length === 0) this.keys.delete(key);
  }
}
