import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const check = (lockFile?: string) =>
  run(process.execPath, ['scripts/check-engines.mjs', ...(lockFile ? [lockFile] : [])]).then(
    ({ stdout }) => ({ code: 0, out: stdout }),
    (error: { code: number; stderr: string }) => ({ code: error.code, out: error.stderr }),
  );

/** scripts/check-engines.mjs (run by `npm run lint`): no locked package may refuse the Node the project supports. */
describe('check-engines', () => {
  let directory: string;
  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'check-engines-'));
  });
  afterAll(() => rm(directory, { recursive: true, force: true }));

  it('passes on the repository lock file', async () => {
    expect(await check()).toMatchObject({ code: 0, out: expect.stringContaining('every package in the lock file accepts Node 20.19.0') });
  });

  it('fails, naming each package, when one wants a newer Node than package.json supports (what npm ci only warned about)', async () => {
    const lock = JSON.parse(await readFile('package-lock.json', 'utf8')) as { packages: Record<string, unknown> };
    lock.packages['node_modules/cookie'] = { version: '2.0.2', engines: { node: '>=22' } };
    lock.packages['node_modules/@nats-io/nuid'] = { version: '3.0.0', engines: { node: '>= 22.x' } };
    // Ranges that accept Node 20.19, and one npm cannot read (ignored by npm too), pass.
    lock.packages['node_modules/fine'] = { version: '1.0.0', engines: { node: '>=18 || >=20.19' } };
    lock.packages['node_modules/odd'] = { version: '1.0.0', engines: { node: 'any' } };
    const file = join(directory, 'package-lock.json');
    await writeFile(file, JSON.stringify(lock));
    const result = await check(file);
    expect(result.code).toBe(1);
    expect(result.out).toContain('2 package(s)');
    expect(result.out).toContain('cookie@2.0.2 wants node >=22');
    expect(result.out).toContain('@nats-io/nuid@3.0.0 wants node >= 22.x');
    expect(result.out).not.toContain('fine@');
  });
});
