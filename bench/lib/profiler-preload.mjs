// Preloaded with `node --import` into every service by `npm run bench:profile`. It is Node's own
// `--cpu-prof` (the same V8 sampling profiler, the same .cpuprofile format) driven from outside: the
// first SIGWINCH starts sampling, the second writes BENCH_PROFILE_DIR/<name>-<pid>.cpuprofile. So the
// profile covers exactly the load window, not the start-up, and no clean exit is needed to get it.
// SIGWINCH because Nest's enableShutdownHooks() stops the application on SIGUSR2 (and SIGUSR1 belongs
// to Node's inspector); its default action is to do nothing.
import { Session } from 'node:inspector/promises';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.env.BENCH_PROFILE_DIR;
const name = process.env.BENCH_PROFILE_NAME ?? 'process';
const session = new Session();
session.connect();
let sampling = false;

process.on('SIGWINCH', () => {
  void toggle().catch((error) => process.stderr.write(`profiler: ${error.message}\n`));
});

async function toggle() {
  if (!sampling) {
    sampling = true;
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 1000 });
    await session.post('Profiler.start');
    return;
  }
  sampling = false;
  const { profile } = await session.post('Profiler.stop');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${name}-${process.pid}.cpuprofile`);
  // Written under another name first: the benchmark waits for the final name to appear.
  writeFileSync(`${file}.partial`, JSON.stringify(profile));
  renameSync(`${file}.partial`, file);
}
