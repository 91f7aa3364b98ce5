import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';

interface Exit {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runService(entry: string, env: Record<string, string>): Promise<Exit> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [entry], { env: { ...process.env, LOG_LEVEL: 'silent', ...env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** Each process validates its environment before doing anything and names the bad variable. */
describe('configuration validated at start', () => {
  beforeAll(() => {
    if (!existsSync('apps/gateway/dist/main.js')) execFileSync('npx', ['tsc', '-b'], { stdio: 'inherit' });
  });

  it.each([
    ['apps/gateway/dist/main.js', { PORT: 'eighty' }, 'PORT'],
    ['apps/gateway/dist/main.js', { GATEWAY_DATABASE_URL: 'mysql://localhost/x' }, 'GATEWAY_DATABASE_URL'],
    ['apps/gateway/dist/main.js', { RPC_TIMEOUT_MS: '5' }, 'RPC_TIMEOUT_MS'],
    ['apps/gateway/dist/main.js', { IDENTITY_CACHE_TTL_MS: '120000' }, 'IDENTITY_CACHE_TTL_MS'],
    ['apps/gateway/dist/main.js', { NODE_ENV: 'production', CURSOR_SECRET: 'a-cursor-secret-of-some-length', KEY_ENCRYPTION_KEYS: '' }, 'KEY_ENCRYPTION_KEYS'],
    ['apps/gateway/dist/main.js', { NODE_ENV: 'production', CURSOR_SECRET: '' }, 'CURSOR_SECRET'],
    ['apps/gateway/dist/main.js', { KEY_ENCRYPTION_KEYS: 'k:short' }, 'KEY_ENCRYPTION_KEYS'],
    ['apps/oms/dist/main.js', { OMS_DATABASE_POOL_SIZE: '0' }, 'OMS_DATABASE_POOL_SIZE'],
    ['apps/oms/dist/main.js', { NATS_SUBJECT_PREFIX: 'no-dot' }, 'NATS_SUBJECT_PREFIX'],
    ['apps/oms/dist/main.js', { NODE_ENV: 'production', CURSOR_SECRET: '' }, 'CURSOR_SECRET'],
    ['apps/dms/dist/main.js', { DMS_DATABASE_URL: 'nonsense' }, 'DMS_DATABASE_URL'],
    ['apps/dms/dist/main.js', { NATS_USER: 'dms' }, 'NATS_PASSWORD'],
    ['apps/oms/dist/worker.js', { NATS_CREDS_FILE: '/nonexistent/worker.creds' }, 'NATS_CREDS_FILE'],
    ['apps/dms/dist/main.js', { LOG_FORMAT: 'yaml' }, 'LOG_FORMAT'],
  ])('%s stops with a message naming the bad variable (%j)', async (entry, env, variable) => {
    const exit = await runService(entry, env);
    expect(exit.code).toBe(1);
    expect(exit.stderr).toContain(variable);
    expect(exit.stderr).toMatch(/Invalid configuration/);
  });
});

/**
 * The processes run without --enable-source-maps: every entry file imports @tracking/core/source-maps
 * first, which maps stack frames in our code to the TypeScript sources and leaves node_modules' frames
 * as the packages' JavaScript (their maps are never read).
 */
describe('stack traces', () => {
  beforeAll(() => {
    if (!existsSync('libs/core/dist/source-maps.js')) execFileSync('npx', ['tsc', '-b'], { stdio: 'inherit' });
  });

  it('name our TypeScript sources and the JavaScript of node_modules', () => {
    const script = [
      "import '@tracking/core/source-maps';",
      "import { env, readConfig } from '@tracking/core';",
      "import { DataSource } from 'typeorm';",
      "try { readConfig({ X: env.int({ min: 1 }) }, { X: 'x' }); } catch (error) { console.log(error.stack); }",
      "try { new DataSource({ type: 'nonsense' }); } catch (error) { console.log(error.stack); }",
    ].join('\n');
    const stacks = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(stacks).toMatch(/at readConfig \(\S+\/libs\/core\/src\/config\.ts:\d+:\d+\)/);
    expect(stacks).toMatch(/at new DataSource \(\S+\/node_modules\/typeorm\/data-source\/DataSource\.js:\d+:\d+\)/);
  });

  it('are mapped by every entry file, first', () => {
    for (const entry of ['gateway/src/main', 'gateway/src/migrate', 'gateway/src/cli/admin', 'oms/src/main', 'oms/src/worker', 'oms/src/migrate', 'dms/src/main', 'dms/src/migrate', 'device-gateway/src/main']) {
      expect(readFileSync(`apps/${entry}.ts`, 'utf8').split('\n')[0], entry).toBe("import '@tracking/core/source-maps';");
    }
  });
});
