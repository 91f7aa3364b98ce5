/** Roles of docs/api.md, "Authentication and roles". */
export enum Role {
  Admin = 'Admin',
  Operator = 'Operator',
  Viewer = 'Viewer',
}

export enum Permission {
  Read = 'Read',
  Write = 'Write',
}

export const ROLE_PERMISSIONS: Record<Role, ReadonlySet<Permission>> = {
  [Role.Admin]: new Set([Permission.Read, Permission.Write]),
  [Role.Operator]: new Set([Permission.Read, Permission.Write]),
  [Role.Viewer]: new Set([Permission.Read]),
};

/** One role on some accounts of the tenant, or on all of them (`"*"`). */
export interface RoleAssignment {
  role: Role;
  accountIds: string[] | '*';
}

/** Whether `assignments` grant `permission` on `accountId`. */
export function isPermitted(assignments: readonly RoleAssignment[], accountId: string, permission: Permission): boolean {
  return assignments.some(
    (assignment) =>
      // Assignments come from a jsonb column: a role this version does not know grants nothing.
      ROLE_PERMISSIONS[assignment.role]?.has(permission) === true &&
      (assignment.accountIds === '*' || assignment.accountIds.includes(accountId)),
  );
}
