import { describe, expect, it } from 'vitest';
import { isPermitted, Permission, Role, type RoleAssignment } from './roles.js';

const A = '0190c6a4-6f1e-7c39-9d52-5b1f2f6c1a01';
const B = '0190c6a4-6f1e-7c39-9d52-5b1f2f6c1a02';

describe('isPermitted', () => {
  // docs/api.md, "Authentication and roles": Admin everything, Operator read and write, Viewer read only.
  it.each([
    [Role.Admin, Permission.Read, true],
    [Role.Admin, Permission.Write, true],
    [Role.Operator, Permission.Read, true],
    [Role.Operator, Permission.Write, true],
    [Role.Viewer, Permission.Read, true],
    [Role.Viewer, Permission.Write, false],
    [Role.Admin, Permission.Ingest, true],
    [Role.Operator, Permission.Ingest, true],
    [Role.Viewer, Permission.Ingest, false],
    [Role.Ingest, Permission.Ingest, true],
    [Role.Ingest, Permission.Read, false],
    [Role.Ingest, Permission.Write, false],
  ])('%s may %s: %s', (role, permission, expected) => {
    expect(isPermitted([{ role, accountIds: '*' }], A, permission)).toBe(expected);
    expect(isPermitted([{ role, accountIds: [A] }], A, permission)).toBe(expected);
  });

  it.each(Object.values(Role))('%s on other accounts grants nothing on this one', (role) => {
    for (const permission of Object.values(Permission)) {
      expect(isPermitted([{ role, accountIds: [B] }], A, permission)).toBe(false);
      expect(isPermitted([{ role, accountIds: [] }], A, permission)).toBe(false);
    }
  });

  it('grants nothing without assignments', () => {
    expect(isPermitted([], A, Permission.Read)).toBe(false);
  });

  it('combines assignments: Viewer everywhere plus Operator on one account', () => {
    const assignments: RoleAssignment[] = [
      { role: Role.Viewer, accountIds: '*' },
      { role: Role.Operator, accountIds: [B] },
    ];
    expect(isPermitted(assignments, A, Permission.Read)).toBe(true);
    expect(isPermitted(assignments, A, Permission.Write)).toBe(false);
    expect(isPermitted(assignments, B, Permission.Write)).toBe(true);
  });

  it('grants nothing for a role it does not know (stored data from elsewhere), without throwing', () => {
    const assignments = [{ role: 'Owner', accountIds: '*' }] as unknown as RoleAssignment[];
    expect(isPermitted(assignments, A, Permission.Read)).toBe(false);
  });
});
