/** A dependency check: passes when it resolves (to anything but `false`) within the probe timeout. */
export type ReadinessCheck = () => unknown;

export interface ReadinessChecks {
  /** Every one must pass for the process to be ready. */
  required: Record<string, ReadinessCheck>;
  /** Reported in the answer, never a reason to be unready. */
  reported?: Record<string, ReadinessCheck>;
  /**
   * Liveness: each must return true while the process can still recover by itself. One that returns
   * false (a NATS connection closed for good) makes `/health/live` answer 503, so that the orchestrator
   * restarts a process that would otherwise stay up but useless.
   */
  live?: Record<string, () => boolean>;
}

export interface LivenessReport {
  live: boolean;
  body: { status: 'ok' | 'failing'; checks: Record<string, CheckResult> };
}

export type CheckResult = 'ok' | 'failing';

export interface ReadinessReport {
  ready: boolean;
  body: { status: 'ok' | 'failing' | 'starting' | 'stopping'; checks: Record<string, CheckResult> };
}

/**
 * Below Kubernetes' probe timeout (2 s in deploy/k8s), so that a hanging dependency is answered as
 * failing rather than as a probe that timed out.
 */
const CHECK_TIMEOUT_MS = 1500;

/**
 * Whether the process should get work: not while it starts (migrations), nor once it stops (a
 * shutdown has begun), and otherwise when its own dependencies answer. Only its own: a gateway whose
 * OMS is down stays ready, or every gateway would leave the load balancer at once.
 */
export class Readiness {
  private state: 'starting' | 'serving' | 'stopping' = 'starting';
  private checks: ReadinessChecks = { required: {} };

  constructor(private readonly timeoutMs = CHECK_TIMEOUT_MS) {}

  serve(checks: ReadinessChecks): void {
    this.checks = checks;
    if (this.state === 'starting') this.state = 'serving';
  }

  stop(): void {
    this.state = 'stopping';
  }

  get stopping(): boolean {
    return this.state === 'stopping';
  }

  /** Live unless a liveness check fails while serving (a process that is starting or stopping is live). */
  liveness(): LivenessReport {
    if (this.state !== 'serving') return { live: true, body: { status: 'ok', checks: {} } };
    const checks: Record<string, CheckResult> = {};
    for (const [name, check] of Object.entries(this.checks.live ?? {})) {
      checks[name] = passesLiveness(check) ? 'ok' : 'failing';
    }
    const live = Object.values(checks).every((result) => result === 'ok');
    return { live, body: { status: live ? 'ok' : 'failing', checks } };
  }

  async report(): Promise<ReadinessReport> {
    if (this.state !== 'serving') return { ready: false, body: { status: this.state, checks: {} } };
    const required = await this.run(this.checks.required);
    const reported = await this.run(this.checks.reported ?? {});
    const ready = Object.values(required).every((result) => result === 'ok');
    return { ready, body: { status: ready ? 'ok' : 'failing', checks: { ...required, ...reported } } };
  }

  private async run(checks: Record<string, ReadinessCheck>): Promise<Record<string, CheckResult>> {
    const entries = await Promise.all(
      Object.entries(checks).map(async ([name, check]) => [name, await this.probe(check)] as const),
    );
    return Object.fromEntries(entries);
  }

  private async probe(check: ReadinessCheck): Promise<CheckResult> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<false>((resolve) => {
      timer = setTimeout(resolve, this.timeoutMs, false);
    });
    try {
      const result = await Promise.race([Promise.resolve().then(check), timeout]);
      return result === false ? 'failing' : 'ok';
    } catch {
      return 'failing';
    } finally {
      clearTimeout(timer);
    }
  }
}

function passesLiveness(check: () => boolean): boolean {
  try {
    return check();
  } catch {
    return false;
  }
}
