#!/usr/bin/env node
// Regenerates libs/sdk/src/generated/api.ts from the OpenAPI document the gateway serves, with
// openapi-typescript's default flags. `npm run -s openapi` prints the same document without PostgreSQL,
// NATS or Redis (test/integration/openapi.spec.ts proves they are equal). test/integration/sdk-types.spec.ts
// fails when the committed file differs from what this script would write.
// Usage (repository root): npm run -s sdk:types
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../..');
const output = join(root, 'libs/sdk/src/generated/api.ts');
const directory = mkdtempSync(join(tmpdir(), 'sdk-types-'));
try {
  const document = execFileSync('npm', ['run', '-s', 'openapi'], { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  const input = join(directory, 'openapi.json');
  writeFileSync(input, document);
  execFileSync(process.execPath, [join(root, 'node_modules/openapi-typescript/bin/cli.js'), input, '-o', output], {
    cwd: root,
    env: { ...process.env, NO_COLOR: '1' },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  process.stderr.write(`wrote ${output}\n`);
} finally {
  rmSync(directory, { recursive: true, force: true });
}
