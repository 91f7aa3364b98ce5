import { readdirSync, readFileSync } from 'node:fs';
import { readBenchConfig } from './lib/config.mjs';
import { issueToken } from './lib/http.mjs';
import { measure } from './lib/load.mjs';
import * as scenarios from './lib/scenarios.mjs';
import { startWithData } from './lib/seed.mjs';
import { BenchStack } from './lib/stack.mjs';

const config = readBenchConfig();
const stack = await new BenchStack(config, { asStarted: true, services: ['oms', 'dms', 'worker', 'gateway', 'device-gateway'] }).prepare();
const threads = (pid) => {
  const out = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const key = tid === String(pid) ? 'main' : `${name}`;
      out[key] = (out[key] ?? [0, 0, 0]).map((v, i) => v + (i < 2 ? Number(f[11 + i]) * 10 : Number(f[7])));
    } catch {}
  }
  return out;
};
try {
  const data = await startWithData(stack, config, {}, { reuse: true });
  data.token = await issueToken(stack.base, data.credentials);
  for (const key of (process.env.PROBE ?? 'list,devices').split(',')) {
    const scenario = key === 'list' ? scenarios.listShipments(data) : scenarios.listDevices(data);
    await measure([scenario], { ...config, warmup: 0, runs: 1, duration: 3 }, () => {});
    const pids = stack.pids();
    const before = Object.fromEntries(Object.entries(pids).map(([n, p]) => [n, threads(p)]));
    const [result] = await measure([scenario], { ...config, warmup: 0, runs: 1, duration: 10 }, () => {});
    const requests = result.runs[0].requests;
    console.log(`\n${scenario.name}: ${result.runs[0].rps} req/s`);
    for (const name of ['oms', 'dms', 'gateway']) {
      const after = threads(pids[name]);
      const rows = Object.entries(after).map(([t, [u, s, m]]) => [t, (u - (before[name][t]?.[0] ?? 0)) / requests, (s - (before[name][t]?.[1] ?? 0)) / requests, (m - (before[name][t]?.[2] ?? 0)) / requests]).filter(([, u, s]) => u + s > 0.001);
      console.log(`  ${name}: ` + rows.map(([t, u, s, m]) => `${t} user ${u.toFixed(3)} sys ${s.toFixed(3)} minflt ${m.toFixed(1)}`).join('; '));
    }
  }
} finally {
  await stack.close();
}
