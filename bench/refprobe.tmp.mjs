// One-off: the reference's CPU and minor faults per list of shipments, glibc defaults against MALLOC_TUNABLES.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { readBenchConfig, resultsDir } from './lib/config.mjs';
import { measure } from './lib/load.mjs';
import { startReference } from './lib/reference.mjs';
import * as scenarios from './lib/scenarios.mjs';
import { MALLOC_TUNABLES } from '../scripts/start-settings.mjs';

const config = readBenchConfig();
const state = JSON.parse(readFileSync(join(resultsDir, 'state.json'), 'utf8'));
const data = state.data;
const stat = (pid) => { const s = readFileSync(`/proc/${pid}/stat`, 'utf8'); const f = s.slice(s.lastIndexOf(')') + 2).split(' '); return [Number(f[11]) * 10, Number(f[12]) * 10, Number(f[7])]; };
for (let i = 0; i < 2; i++) {
  for (const tunables of [undefined, MALLOC_TUNABLES]) {
    if (tunables) process.env.GLIBC_TUNABLES = tunables; else delete process.env.GLIBC_TUNABLES;
    const reference = await startReference(config, state.config.shipments);
    const scenario = scenarios.referenceListShipments(data, reference);
    await measure([scenario], { ...config, warmup: 0, runs: 1, duration: 3 }, () => {});
    const before = stat(reference.child.pid);
    const [{ runs }] = await measure([scenario], { ...config, warmup: 0, runs: 1, duration: 10 }, () => {});
    const after = stat(reference.child.pid);
    const n = runs[0].requests;
    console.log(`${tunables ? 'tunables' : 'defaults'}: ${runs[0].rps} req/s, user ${((after[0] - before[0]) / n).toFixed(3)} system ${((after[1] - before[1]) / n).toFixed(3)} ms, faults ${((after[2] - before[2]) / n).toFixed(1)} per request`);
    await reference.stop();
  }
}
