import { CreateShipments1763800000000 } from './1763800000000-create-shipments.js';
import { CreatePointsOfInterest1763800001000 } from './1763800001000-create-points-of-interest.js';

/** Every OMS migration, oldest first. */
export const omsMigrations = [CreateShipments1763800000000, CreatePointsOfInterest1763800001000];
