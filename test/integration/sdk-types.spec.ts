import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestStack } from '../support/stack.js';

const OPENAPI_TYPESCRIPT = 'node_modules/openapi-typescript/bin/cli.js';
const COMMITTED = 'libs/sdk/src/generated/api.ts';

describe("the SDK's generated types", () => {
  let stack: TestStack;

  beforeAll(async () => {
    stack = await TestStack.start();
  });
  afterAll(() => stack?.stop());

  it('are what openapi-typescript makes of the document the gateway serves (else run `npm run -s sdk:types`)', async () => {
    const served = await stack.request('GET', '/v1/openapi.json');
    expect(served.status).toBe(200);
    const directory = await mkdtemp(join(tmpdir(), 'sdk-types-'));
    try {
      await writeFile(join(directory, 'openapi.json'), served.text);
      await promisify(execFile)(process.execPath, [OPENAPI_TYPESCRIPT, join(directory, 'openapi.json'), '-o', join(directory, 'api.ts')], {
        env: { ...process.env, NO_COLOR: '1' },
      });
      const generated = await readFile(join(directory, 'api.ts'), 'utf8');
      const committed = await readFile(COMMITTED, 'utf8');
      expect(generated.length).toBeGreaterThan(10000);
      // Compared line by line so that a failure shows what drifted, not two 200 KB strings.
      expect(committed.split('\n'), `${COMMITTED} is stale: run \`npm run -s sdk:types\` and commit it`).toEqual(generated.split('\n'));
    } finally {
      await rm(directory, { recursive: true, force: true });
    }
  }, 120000);
});
