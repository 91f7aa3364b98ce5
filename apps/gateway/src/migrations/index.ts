import { CreateIdentity1763800000000 } from './1763800000000-create-identity.js';

/** Every gateway (identity) migration, oldest first. */
export const gatewayMigrations = [CreateIdentity1763800000000];
