import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SOURCE = fileURLToPath(new URL('../../src', import.meta.url));
/** A statement that names the table (`FROM devices`, `JOIN devices AS x`, ...), or one TypeORM builds from the entity (`findOne(DeviceEntity, ...)`). */
const STATEMENT = /\b(FROM|JOIN|UPDATE|INTO|TABLE)\s+devices\b|\(\s*DeviceEntity\s*[,)]/i;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'migrations' ? [] : sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

describe('statements on devices', () => {
  it('are all in DeviceRepository', () => {
    const offenders = sources(SOURCE)
      .map((path) => relative(SOURCE, path))
      .filter((path) => path !== 'devices/device.repository.ts' && STATEMENT.test(readFileSync(join(SOURCE, path), 'utf8')));
    expect(offenders).toEqual([]);
  });
});
