import '@tracking/core/source-maps';
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { ConfigError } from '@tracking/core';
import { SigningKeysService } from '../auth/signing-keys.service.js';
import { readGatewayConfig } from '../config.js';
import { prepareGatewayDatabase } from '../gateway-database.js';
import { IdentityService } from '../identity/identity.service.js';
import { AdminModule } from './admin.module.js';
import { ProvisioningError, runAdminCommand, USAGE, UsageError } from './admin-commands.js';

/** `npm run -s admin -- <command>`: one JSON object on stdout, or a message on stderr and exit 1/2. */
async function main(argv: string[]): Promise<number> {
  let config;
  try {
    config = readGatewayConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`admin: ${error.message}\n`);
      return 2;
    }
    throw error;
  }
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === 'help') {
    process.stderr.write(`${USAGE}\n`);
    return argv.length === 0 ? 2 : 0;
  }
  const dataSource = await prepareGatewayDatabase(config);
  const app = await NestFactory.createApplicationContext(AdminModule.forRoot(config, dataSource), { logger: false });
  try {
    const result = await runAdminCommand(argv, { identity: app.get(IdentityService), keys: app.get(SigningKeysService) });
    process.stdout.write(`${JSON.stringify(result)}\n`);
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`admin: ${error.message}\n\n${USAGE}\n`);
      return 2;
    }
    if (error instanceof ProvisioningError) {
      process.stderr.write(`admin: ${error.message}\n`);
      return 1;
    }
    throw error;
  } finally {
    await app.close();
    // Closing the context closes the DataSource through TypeOrmModule; this covers a failed start.
    if (dataSource.isInitialized) await dataSource.destroy();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`admin: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
