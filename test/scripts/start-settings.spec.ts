import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error -- a plain ES module of the start script, without type declarations.
import { latenessNotice, localSettings, MALLOC_TUNABLES, mallocSettings, NODE_ARGS } from '../../scripts/start-settings.mjs';

const settings = localSettings as (env: Record<string, string | undefined>, colourTerminal: boolean) => Record<string, string>;
const notice = latenessNotice as (env: Record<string, string | undefined>) => string;

describe('npm start: settings for people, and what it says about them', () => {
  it('unset: readable lines and a 30 s lateness bound, said with the production default', () => {
    expect(settings({}, false)).toEqual({ LOG_FORMAT: 'pretty', EVALUATION_LATENESS_SECONDS: '30' });
    expect(notice({})).toMatch(/silent for 30 s \(EVALUATION_LATENESS_SECONDS=30 for npm start; 600 by default\)/);
  });

  it('set: passed on as it is, and the notice names the value given', () => {
    expect(settings({ LOG_FORMAT: 'json', EVALUATION_LATENESS_SECONDS: '600' }, false)).toEqual({ LOG_FORMAT: 'json', EVALUATION_LATENESS_SECONDS: '600' });
    expect(notice({ EVALUATION_LATENESS_SECONDS: '5' })).toMatch(/silent for 5 s \(EVALUATION_LATENESS_SECONDS=5\)/);
  });

  it('colours on a terminal, unless NO_COLOR or FORCE_COLOR says otherwise', () => {
    expect(settings({}, true).FORCE_COLOR).toBe('1');
    expect(settings({ NO_COLOR: '1' }, true).FORCE_COLOR).toBeUndefined();
    expect(settings({}, false).FORCE_COLOR).toBeUndefined();
  });

  it('gives the OMS, the DMS, the device gateway and the gateway the Node options the Kubernetes manifests and docker-compose.yml spell out', () => {
    const nodeArgs = NODE_ARGS as Record<string, string[]>;
    expect(nodeArgs).toEqual({
      oms: ['--no-memory-reducer', '--no-allocation-site-pretenuring'],
      dms: ['--no-memory-reducer', '--max-semi-space-size=32'],
      'device-gateway': ['--max-semi-space-size=32'],
      gateway: ['--heap-growing-percent=100'],
    });
    for (const [service, args] of Object.entries(nodeArgs)) {
      const command = ['node', ...args, `apps/${service}/dist/main.js`].map((part) => `'${part}'`).join(', ');
      expect(readFileSync(`deploy/k8s/base/${service}.yaml`, 'utf8'), service).toContain(`command: [${command}]`);
      expect(readFileSync('docker-compose.yml', 'utf8'), service).toContain(`command: [${command}]`);
    }
  });

  it('gives the OMS and the DMS the malloc settings the manifests and docker-compose.yml spell out, unless GLIBC_TUNABLES is already set', () => {
    const malloc = mallocSettings as (service: string, env: Record<string, string | undefined>) => Record<string, string>;
    const tunables = MALLOC_TUNABLES as string;
    expect(tunables).toBe('glibc.malloc.trim_threshold=16777216:glibc.malloc.mmap_threshold=4194304:glibc.malloc.arena_max=2');
    for (const service of ['oms', 'dms']) {
      expect(malloc(service, {})).toEqual({ GLIBC_TUNABLES: tunables });
      expect(malloc(service, { GLIBC_TUNABLES: 'glibc.malloc.arena_max=4' })).toEqual({ GLIBC_TUNABLES: 'glibc.malloc.arena_max=4' });
      const manifest = readFileSync(`deploy/k8s/base/${service}.yaml`, 'utf8');
      expect(manifest, service).toContain(`- name: GLIBC_TUNABLES\n              value: '${tunables}'`);
    }
    for (const service of ['gateway', 'worker', 'device-gateway']) expect(malloc(service, {}), service).toEqual({});
    const compose = readFileSync('docker-compose.yml', 'utf8');
    // Once in each of the two services' blocks (a service's lines are indented by four spaces or more).
    const line = `      GLIBC_TUNABLES: ${tunables.replace(/\./g, '\\.')}`;
    expect(compose.split(`GLIBC_TUNABLES: ${tunables}`).length - 1).toBe(2);
    for (const service of ['oms', 'dms']) expect(compose, service).toMatch(new RegExp(`\\n  ${service}:\\n(?: {4}.*\\n)*?${line}`));
  });
});
