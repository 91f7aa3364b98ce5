import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTenant, type TestTenant } from '../factories/identity.factory.js';
import { TestStack } from '../support/stack.js';

const run = promisify(execFile);
const SDK = resolve('libs/sdk');
const TSC = resolve('node_modules/typescript/bin/tsc');
const NPM = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/**
 * The tarball `npm run build` leaves in libs/sdk (its `npm pack`), as the README tells integrators to
 * install it, installed into an empty project that compiles and runs a program against a stack.
 */
describe('the @tracking/sdk package', () => {
  let stack: TestStack;
  let tenant: TestTenant;
  let directory: string;

  beforeAll(async () => {
    stack = await TestStack.start({ workers: 1 });
    tenant = await createTenant(stack);
    directory = await mkdtemp(join(tmpdir(), 'sdk-consumer-'));
  });
  afterAll(async () => {
    await stack?.stop();
    if (directory) await rm(directory, { recursive: true, force: true });
  });

  it('packs only its build and README, installs into an empty project with no server dependency, compiles strictly and works against the stack', async () => {
    const { version } = JSON.parse(await readFile(join(SDK, 'package.json'), 'utf8')) as { version: string };
    const tarball = join(SDK, `tracking-sdk-${version}.tgz`);
    const { stdout: listing } = await run('tar', ['-tzf', tarball]);
    const files = listing
      .split('\n')
      .filter((path) => path.startsWith('package/') && !path.endsWith('/'))
      .map((path) => path.slice('package/'.length));
    // Made by this build, not left over from an older one.
    const { stdout: packedIndex } = await run('tar', ['-xzOf', tarball, 'package/dist/index.js']);
    expect(packedIndex).toBe(await readFile(join(SDK, 'dist/index.js'), 'utf8'));
    expect(files).toContain('dist/index.js');
    expect(files).toContain('dist/index.d.ts');
    expect(files).toContain('dist/generated/api.d.ts');
    expect(files).toContain('README.md');
    expect(files.filter((path) => !/^dist\/.+\.(js|d\.ts)$/.test(path)).sort()).toEqual(['README.md', 'package.json'].sort());
    expect(files.some((path) => path.includes('.spec.'))).toBe(false);

    const project = join(directory, 'project');
    await run('mkdir', [project]);
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'sdk-consumer', private: true, type: 'module' }));
    await run(NPM, ['install', tarball, '--no-audit', '--no-fund', '--prefer-offline', '--ignore-scripts'], { cwd: project });
    // Nothing of the server came along: the SDK and the webhook library's own small dependencies only.
    const installed = (await readdir(join(project, 'node_modules'), { recursive: true })).filter((path) => path.endsWith('package.json') && path.split('/').length <= 3);
    const names = installed.map((path) => path.replace(/\/package\.json$/, '')).sort();
    expect(names).toEqual(['@stablelib/base64', '@tracking/sdk', 'fast-sha256', 'standardwebhooks']);
    const manifest = JSON.parse(await readFile(join(project, 'node_modules/@tracking/sdk/package.json'), 'utf8'));
    expect(manifest).toMatchObject({ name: '@tracking/sdk', type: 'module', dependencies: { standardwebhooks: '1.1.1' } });
    expect(Object.keys(manifest.dependencies)).toEqual(['standardwebhooks']);

    await copyFile('test/sdk-consumer/consumer.ts', join(project, 'consumer.ts'));
    const compilerOptions = {
      target: 'ES2022',
      lib: ['ES2023', 'DOM'],
      module: 'NodeNext',
      moduleResolution: 'NodeNext',
      strict: true,
      skipLibCheck: false,
      types: [],
      outDir: 'out',
    };
    await writeFile(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['consumer.ts'] }));
    const compiled = await run(process.execPath, [TSC, '-p', 'tsconfig.json', '--pretty', 'false'], { cwd: project }).then(
      ({ stdout }) => stdout,
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );
    expect(compiled.split('\n').filter((line) => line.includes('error TS'))).toEqual([]);

    const { stdout } = await run(process.execPath, ['out/consumer.js'], {
      cwd: project,
      env: {
        ...process.env,
        TRACKING_BASE_URL: stack.baseUrl,
        TRACKING_TENANT_ID: tenant.tenantId,
        TRACKING_APPLICATION_ID: tenant.applicationId,
        TRACKING_APPLICATION_SECRET: tenant.applicationSecret,
        TRACKING_ACCOUNT_ID: tenant.accountIds[0]!,
      },
    });
    expect(JSON.parse(stdout)).toEqual({
      updatedName: 'Rotterdam to Milan',
      etag: '"2"',
      names: ['Rotterdam to Milan'],
      trackType: 'FeatureCollection',
      features: 0,
      notFound: { status: 404, code: 'ShipmentNotExists' },
      operationStatus: 'Succeeded',
      results: ['Succeeded'],
      verification: 'refused',
    });
  }, 240000);
});
