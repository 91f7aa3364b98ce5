import type { RoleAssignment } from '../identity/roles.js';

/** The authenticated caller, set on the request by the JWT strategy. */
export interface Principal {
  applicationId: string;
  tenantId: string;
  roleAssignments: RoleAssignment[];
}
