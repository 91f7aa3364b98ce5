import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cloneDatabase, dropDatabases } from '@tracking/testing';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { issueToken } from '../factories/identity.factory.js';
import { UUID } from '../support/http-assertions.js';
import { TestStack } from '../support/stack.js';
import { expectUnauthorized } from '../support/tokens.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLI = 'apps/gateway/dist/cli/admin.js';
const UNKNOWN_ID = '0190c6a4-6f1e-7c39-9d52-5b1f2f6c1a2b';

interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

describe('admin command line (compiled, against its own database)', () => {
  const databaseName = `${inject('runId')}_admincli_${process.pid}`;
  let databaseUrl: string;
  let db: pg.Client;

  function admin(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [CLI, ...args], {
        cwd: ROOT,
        env: { ...process.env, GATEWAY_DATABASE_URL: databaseUrl, LOG_LEVEL: 'silent', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
  }

  /** Runs a command that must succeed and returns the one JSON object it printed. */
  async function ok<T = Record<string, string>>(...args: string[]): Promise<T> {
    const result = await admin(args);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^\{[^\n]*\}\n$/);
    expect(result.stderr).toBe('');
    return JSON.parse(result.stdout) as T;
  }

  async function fails(args: string[], message: RegExp): Promise<CliResult> {
    const result = await admin(args);
    expect(result.code).not.toBe(0);
    expect(result.code).not.toBeNull();
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(message);
    return result;
  }

  async function count(table: 'tenants' | 'accounts' | 'applications'): Promise<number> {
    return Number((await db.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
  }

  beforeAll(async () => {
    // `npm test` builds first; this covers running the file alone on a fresh checkout.
    if (!existsSync(`${ROOT}/${CLI}`)) execFileSync('npx', ['tsc', '-b'], { cwd: ROOT, stdio: 'inherit', timeout: 280000 });
    databaseUrl = await cloneDatabase(`${inject('runId')}_gateway_tpl`, databaseName);
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
  }, 300000);
  afterAll(async () => {
    await db?.end();
    await dropDatabases(databaseName);
  });

  describe('provisioning', () => {
    let tenantId: string;
    let accountIds: string[];
    let stack: TestStack;

    beforeAll(async () => {
      // A gateway on the CLI's database, without identity caching, to check credentials over HTTP.
      stack = await TestStack.start({ env: { GATEWAY_DATABASE_URL: databaseUrl, IDENTITY_CACHE_TTL_MS: '0' } });
    });
    afterAll(() => stack?.stop());

    it('tenant create prints {tenantId}', async () => {
      const printed = await ok('tenant', 'create', '--name', 'Acme Freight');
      expect(printed).toStrictEqual({ tenantId: expect.stringMatching(UUID) });
      tenantId = printed.tenantId!;
      const { rows } = await db.query('SELECT name FROM tenants WHERE id = $1', [tenantId]);
      expect(rows).toEqual([{ name: 'Acme Freight' }]);
    });

    it('account create prints {accountId}', async () => {
      accountIds = [];
      for (const name of ['North', 'South']) {
        const printed = await ok('account', 'create', '--tenant', tenantId, '--name', name);
        expect(printed).toStrictEqual({ accountId: expect.stringMatching(UUID) });
        accountIds.push(printed.accountId!);
      }
      const { rows } = await db.query('SELECT id, tenant_id FROM accounts WHERE tenant_id = $1 ORDER BY name', [tenantId]);
      expect(rows).toEqual([
        { id: accountIds[0], tenant_id: tenantId },
        { id: accountIds[1], tenant_id: tenantId },
      ]);
    });

    it.each([
      ['Admin', () => '*', () => '*' as const],
      ['Operator', () => accountIds.join(','), () => accountIds],
      ['Viewer', () => accountIds[1]!, () => [accountIds[1]]],
      ['Ingest', () => accountIds[0]!, () => [accountIds[0]]],
    ])('application create --role %s prints its id and secret once, and stores only a hash', async (role, accounts, expected) => {
      const printed = await ok('application', 'create', '--tenant', tenantId, '--name', `${role} app`, '--role', role, '--accounts', accounts());
      expect(printed).toStrictEqual({ applicationId: expect.stringMatching(UUID), applicationSecret: expect.any(String) });
      expect(printed.applicationSecret!.length).toBeGreaterThanOrEqual(32);
      const { rows } = await db.query('SELECT * FROM applications WHERE id = $1', [printed.applicationId]);
      expect(rows[0]).toMatchObject({ tenant_id: tenantId, status: 'Active', role_assignments: [{ role, accountIds: expected() }] });
      expect(rows[0].secret_hash).toMatch(/^scrypt\$/);
      expect(JSON.stringify(rows[0])).not.toContain(printed.applicationSecret);
      await issueToken(stack, tenantId, printed.applicationId!, printed.applicationSecret!);
    });

    it('application create gives each application its own secret', async () => {
      const args = ['application', 'create', '--tenant', tenantId, '--name', 'Twin', '--role', 'Viewer', '--accounts', '*'];
      const [first, second] = [await ok(...args), await ok(...args)];
      expect(first.applicationSecret).not.toBe(second.applicationSecret);
      expect(first.applicationId).not.toBe(second.applicationId);
    });

    it('application disable prints the new status; the application gets no token and its tokens stop working', async () => {
      const created = await ok('application', 'create', '--tenant', tenantId, '--name', 'Soon disabled', '--role', 'Admin', '--accounts', '*');
      const token = await issueToken(stack, tenantId, created.applicationId!, created.applicationSecret!);
      const path = `/v1/accounts/${accountIds[0]}/shipments`;
      expect((await stack.request('GET', path, { token })).status).toBe(200);

      expect(await ok('application', 'disable', '--application', created.applicationId!)).toStrictEqual({
        applicationId: created.applicationId,
        status: 'Disabled',
      });
      const denied = await stack.request('POST', '/v1/applications/token', { body: { tenantId, ...created } });
      expectUnauthorized(denied);
      expectUnauthorized(await stack.request('GET', path, { token }));
    });

    it('application rotate-secret prints a new secret; the old one stops working', async () => {
      const created = await ok('application', 'create', '--tenant', tenantId, '--name', 'Rotated', '--role', 'Operator', '--accounts', '*');
      const rotated = await ok('application', 'rotate-secret', '--application', created.applicationId!);
      expect(rotated).toStrictEqual({ applicationId: created.applicationId, applicationSecret: expect.any(String) });
      expect(rotated.applicationSecret).not.toBe(created.applicationSecret);

      const withOld = await stack.request('POST', '/v1/applications/token', { body: { tenantId, ...created } });
      expectUnauthorized(withOld);
      const withNew = await stack.request('POST', '/v1/applications/token', { body: { tenantId, ...rotated } });
      expect(withNew.status, withNew.text).toBe(200);
    });

    describe('bad command lines: a message on stderr, nothing on stdout, a non-zero exit', () => {
      it('no command', async () => {
        expect((await fails([], /Usage:/)).code).toBe(2);
      });

      it('an unknown command', async () => {
        expect((await fails(['tenant', 'delete', '--name', 'X'], /unknown command "tenant delete"/)).code).toBe(2);
        await fails(['frobnicate'], /unknown command/);
      });

      it('a missing --name', async () => {
        expect((await fails(['tenant', 'create'], /--name is required/)).code).toBe(2);
        await fails(['account', 'create', '--tenant', tenantId], /--name is required/);
      });

      it('an empty or blank name', async () => {
        await fails(['tenant', 'create', '--name', ''], /--name is required/);
        await fails(['tenant', 'create', '--name', '   '], /name must be 1 to 200 characters/);
      });

      it('an unknown flag, which creates nothing', async () => {
        const before = await count('tenants');
        expect((await fails(['tenant', 'create', '--name', 'X', '--colour', 'red'], /colour/)).code).toBe(2);
        expect(await count('tenants')).toBe(before);
      });

      it('an unknown tenant', async () => {
        expect((await fails(['account', 'create', '--tenant', UNKNOWN_ID, '--name', 'X'], /tenant .* does not exist/)).code).toBe(1);
        await fails(['account', 'create', '--tenant', 'acme', '--name', 'X'], /tenant acme does not exist/);
        await fails(
          ['application', 'create', '--tenant', UNKNOWN_ID, '--name', 'X', '--role', 'Admin', '--accounts', '*'],
          /tenant .* does not exist/,
        );
      });

      it('a bad role', async () => {
        const before = await count('applications');
        const args = ['application', 'create', '--tenant', tenantId, '--name', 'X', '--role', 'Owner', '--accounts', '*'];
        expect((await fails(args, /role must be one of Admin, Operator, Viewer, Ingest/)).code).toBe(1);
        await fails([...args.slice(0, -3), 'admin', '--accounts', '*'], /role must be one of/);
        expect(await count('applications')).toBe(before);
      });

      it('an account of another tenant, or none at all', async () => {
        const { tenantId: otherTenant } = await ok('tenant', 'create', '--name', 'Other');
        const { accountId: otherAccount } = await ok('account', 'create', '--tenant', otherTenant!, '--name', 'Theirs');
        const before = await count('applications');
        const create = (accounts: string) =>
          fails(['application', 'create', '--tenant', tenantId, '--name', 'X', '--role', 'Viewer', '--accounts', accounts], /./);
        expect((await create(otherAccount!)).stderr).toMatch(/does not exist in tenant/);
        expect((await create(`${accountIds[0]},${otherAccount}`)).stderr).toMatch(new RegExp(`account ${otherAccount}`));
        expect((await create('not-an-id')).stderr).toMatch(/account not-an-id does not exist/);
        expect((await create(',')).stderr).toMatch(/does not exist|at least one/);
        expect(await count('applications')).toBe(before);
      });

      it('a missing --accounts or --role', async () => {
        await fails(['application', 'create', '--tenant', tenantId, '--name', 'X', '--role', 'Admin'], /--accounts is required/);
        await fails(['application', 'create', '--tenant', tenantId, '--name', 'X', '--accounts', '*'], /--role is required/);
      });

      it('an unknown application', async () => {
        expect((await fails(['application', 'disable', '--application', UNKNOWN_ID], /application .* does not exist/)).code).toBe(1);
        await fails(['application', 'rotate-secret', '--application', 'nope'], /application nope does not exist/);
      });

      it('a bad GATEWAY_DATABASE_URL, naming the variable', async () => {
        const result = await admin(['tenant', 'create', '--name', 'X'], { GATEWAY_DATABASE_URL: 'mysql://localhost/x' });
        expect(result).toMatchObject({ code: 2, stdout: '' });
        expect(result.stderr).toMatch(/GATEWAY_DATABASE_URL/);
      });
    });
  });
});
