/** Roles of docs/api.md, "Authentication and roles". */
export enum Role {
  Admin = 'Admin',
  Operator = 'Operator',
  Viewer = 'Viewer',
  /** A device cloud forwarding what trackers send: `POST /readings` and nothing else. */
  Ingest = 'Ingest',
}

export enum Permission {
  Read = 'Read',
  Write = 'Write',
  /** Sending readings; routes that need it say so (`@Requires(Permission.Ingest)`), others need Read or Write by method. */
  Ingest = 'Ingest',
}

export const ROLE_PERMISSIONS: Record<Role, ReadonlySet<Permission>> = {
  [Role.Admin]: new Set([Permission.Read, Permission.Write, Permission.Ingest]),
  [Role.Operator]: new Set([Permission.Read, Permission.Write, Permission.Ingest]),
  [Role.Viewer]: new Set([Permission.Read]),
  [Role.Ingest]: new Set([Permission.Ingest]),
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
