import { Column, Entity, PrimaryColumn } from 'typeorm';
import type { RoleAssignment } from './roles.js';

export enum ApplicationStatus {
  Active = 'Active',
  Disabled = 'Disabled',
}

@Entity({ name: 'applications' })
export class ApplicationEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ type: 'text' })
  name: string;

  /** `scrypt$N$r$p$salt$hash`; the secret itself is never stored. */
  @Column({ name: 'secret_hash', type: 'text' })
  secretHash: string;

  @Column({ type: 'text' })
  status: ApplicationStatus;

  @Column({ name: 'role_assignments', type: 'jsonb' })
  roleAssignments: RoleAssignment[];

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
