// CPU time used by the processes under test and by their PostgreSQL backends, from /proc. Divided by
// the requests served, it gives CPU milliseconds per request: a figure that other load on a shared
// machine disturbs far less than requests per second or latency. Beside it, the read and write system
// calls per request: how many trips through the kernel a request takes on the way through the processes.
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';

// Linux reports utime/stime in clock ticks; USER_HZ is 100 on every mainstream kernel configuration.
const TICKS_PER_SECOND = 100;

/**
 * A process's or a thread's name, user and system CPU time in ms and minor page faults so far, from its
 * stat file (`/proc/<pid>/stat`, `/proc/<pid>/task/<tid>/stat`); undefined when it has exited.
 */
export function readStat(path) {
  let stat;
  try {
    stat = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  // Fields after "(comm)": state is field 3, minflt field 10, utime field 14, stime field 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
    userMs: (Number(fields[11]) * 1000) / TICKS_PER_SECOND,
    systemMs: (Number(fields[12]) * 1000) / TICKS_PER_SECOND,
    minorFaults: Number(fields[7]),
  };
}

/** User + system CPU time of a process in ms, or 0 when it has exited. */
export function processCpuMs(pid) {
  const stat = readStat(`/proc/${pid}/stat`);
  return stat ? stat.userMs + stat.systemMs : 0;
}

/**
 * The read and write system calls a process has made so far (`syscr` + `syscw` of /proc/<pid>/io: read,
 * readv, write, writev and the like, which Node, nats-server and Redis use on their sockets; not recv, send
 * or epoll_wait, so not PostgreSQL's backends, which use recv and send), or 0 when it has exited.
 */
export function processIoCalls(pid) {
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8');
    const count = (field) => Number(new RegExp(`^${field}: (\\d+)$`, 'm').exec(io)?.[1] ?? 0);
    return count('syscr') + count('syscw');
  } catch {
    return 0;
  }
}

/**
 * The pids of the machine's broker processes the stack talks to (NATS, Redis), by command name: they are
 * shared services, but nothing else uses them while the bench runs, and their CPU is part of our cost.
 */
export function brokerPids() {
  const wanted = { 'nats-server': 'nats', 'redis-server': 'redis' };
  const found = {};
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const name = wanted[readFileSync(`/proc/${entry}/comm`, 'utf8').trim()];
      if (name && found[name] === undefined) found[name] = Number(entry);
    } catch {
      // The process ended while we looked.
    }
  }
  return found;
}

export class CpuMeter {
  /**
   * @param pgUrl the maintenance connection (its own backend is in database `postgres`, not counted)
   * @param processes () => { name: pid } of the processes to count
   * @param databases the databases whose backends count as `postgres`
   */
  constructor(pgUrl, processes, databases) {
    this.processes = processes;
    this.databases = databases;
    this.client = new pg.Client({ connectionString: pgUrl });
    this.connected = this.client.connect();
  }

  /**
   * CPU ms so far of each process, and of each PostgreSQL backend by pid; and their I/O system calls so
   * far (`io`, the same shape).
   */
  async sample() {
    await this.connected;
    const processes = {};
    const ioProcesses = {};
    for (const [name, pid] of Object.entries(this.processes())) {
      processes[name] = processCpuMs(pid);
      ioProcesses[name] = processIoCalls(pid);
    }
    const { rows } = await this.client.query('SELECT pid FROM pg_stat_activity WHERE datname = ANY($1)', [this.databases]);
    const backends = Object.fromEntries(rows.map(({ pid }) => [pid, processCpuMs(pid)]));
    const ioBackends = Object.fromEntries(rows.map(({ pid }) => [pid, processIoCalls(pid)]));
    return { processes, backends, io: { processes: ioProcesses, backends: ioBackends } };
  }

  /** I/O system calls per request of each process, of PostgreSQL and in total between two samples (one decimal). */
  static ioCallsPerRequest(before, after, requests) {
    const used = CpuMeter.used(before.io, after.io);
    return Object.fromEntries(Object.entries(used).map(([name, calls]) => [name, requests > 0 ? Math.round((calls / requests) * 10) / 10 : null]));
  }

  /**
   * CPU ms per request of each process and of PostgreSQL between two samples. A backend that started in
   * between counts whole; one that ended in between is lost (pools keep theirs open, so this is rare).
   */
  static perRequest(before, after, requests) {
    const round = (value) => Math.round(value * 100) / 100;
    return Object.fromEntries(Object.entries(CpuMeter.used(before, after)).map(([name, ms]) => [name, requests > 0 ? round(ms / requests) : null]));
  }

  /**
   * CPU ms of each process, of PostgreSQL and in total between two samples (see `perRequest`); given the
   * samples' `io`, their I/O system calls.
   */
  static used(before, after) {
    const used = {};
    for (const [name, ms] of Object.entries(after.processes)) used[name] = ms - (before.processes[name] ?? 0);
    used.postgres = Object.entries(after.backends).reduce((sum, [pid, ms]) => sum + ms - (before.backends[pid] ?? 0), 0);
    used.total = Object.values(used).reduce((sum, ms) => sum + ms, 0);
    return used;
  }

  /**
   * Waits until the processes use less than `threshold` of one core together, measured over 1 s: work
   * queued by one scenario (scrypt hashes of token requests, say) must not run into the next one.
   * Returns the ms waited; gives up after `maxMs`.
   */
  async waitUntilIdle(threshold = 0.1, maxMs = 60000) {
    const started = performance.now();
    while (performance.now() - started < maxMs) {
      const before = await this.sample();
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const after = await this.sample();
      const busy = Object.keys(after.processes).reduce((sum, name) => sum + after.processes[name] - (before.processes[name] ?? 0), 0);
      if (busy < threshold * 1000) break;
    }
    return Math.round(performance.now() - started);
  }

  close() {
    return this.client.end();
  }
}
