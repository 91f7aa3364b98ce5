import { parseArgs } from 'node:util';
import type { SigningKeysService } from '../auth/signing-keys.service.js';
import { type IdentityService, ProvisioningError } from '../identity/identity.service.js';
import { Role } from '../identity/roles.js';

/** A command line that is not one of ours; the CLI prints the usage with it. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export const USAGE = `Usage: npm run -s admin -- <command>
  tenant create --name NAME
  account create --tenant TENANT_ID --name NAME
  application create --tenant TENANT_ID --name NAME --role ${Object.values(Role).join('|')} --accounts ACCOUNT_ID[,ACCOUNT_ID...]|*
  application disable --application APPLICATION_ID
  application rotate-secret --application APPLICATION_ID
  key rotate
  key reseal           (encrypts every signing key with the first of KEY_ENCRYPTION_KEYS; also done at each gateway start)
  demo seed            (creates a demo tenant, account and Admin application if there is no tenant yet)
Each command prints one JSON object on stdout.`;

export interface AdminServices {
  identity: IdentityService;
  keys: SigningKeysService;
}

type Options = Record<string, string | undefined>;

function required(options: Options, name: string): string {
  const value = options[name];
  if (value === undefined || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

/** Runs one admin command and returns the JSON object it prints. */
export async function runAdminCommand(argv: string[], services: AdminServices): Promise<object> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        name: { type: 'string' },
        tenant: { type: 'string' },
        role: { type: 'string' },
        accounts: { type: 'string' },
        application: { type: 'string' },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const options = parsed.values as Options;
  const command = parsed.positionals.join(' ');
  switch (command) {
    case 'tenant create':
      return services.identity.createTenant(required(options, 'name'));
    case 'account create':
      return services.identity.createAccount(required(options, 'tenant'), required(options, 'name'));
    case 'application create': {
      const accounts = required(options, 'accounts');
      return services.identity.createApplication(
        required(options, 'tenant'),
        required(options, 'name'),
        required(options, 'role'),
        accounts === '*' ? '*' : accounts.split(',').map((id) => id.trim()),
      );
    }
    case 'application disable':
      return services.identity.disableApplication(required(options, 'application'));
    case 'application rotate-secret':
      return services.identity.rotateSecret(required(options, 'application'));
    case 'key rotate':
      return services.keys.rotate();
    case 'key reseal':
      return services.keys.reseal();
    case 'demo seed':
      return seedDemo(services.identity);
    default:
      throw new UsageError(command ? `unknown command "${command}"` : 'no command given');
  }
}

/** The demo tenant of `npm start`, created only while the identity database has no tenant at all. */
async function seedDemo(identity: IdentityService): Promise<object> {
  if (!(await identity.isEmpty())) return { seeded: false };
  const { tenantId } = await identity.createTenant('Demo Logistics');
  const { accountId } = await identity.createAccount(tenantId, 'Demo account');
  const credentials = await identity.createApplication(tenantId, 'Demo admin application', Role.Admin, '*');
  return { seeded: true, tenantId, accountId, ...credentials };
}

export { ProvisioningError };
