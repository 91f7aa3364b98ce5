import { CreateIdentity1763800000000 } from './1763800000000-create-identity.js';
import { SealSigningKeys1764000000000 } from './1764000000000-seal-signing-keys.js';
import { OrderAccounts1764800000000 } from './1764800000000-order-accounts.js';

/** Every gateway (identity) migration, oldest first. */
export const gatewayMigrations = [CreateIdentity1763800000000, SealSigningKeys1764000000000, OrderAccounts1764800000000];
