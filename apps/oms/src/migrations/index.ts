import { CreateShipments1763800000000 } from './1763800000000-create-shipments.js';

/** Every OMS migration, oldest first. */
export const omsMigrations = [CreateShipments1763800000000];
