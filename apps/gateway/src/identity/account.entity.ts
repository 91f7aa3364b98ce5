import { Column, Entity, PrimaryColumn } from 'typeorm';

@Entity({ name: 'accounts' })
export class AccountEntity {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  @Column({ name: 'tenant_id', type: 'uuid' })
  tenantId: string;

  @Column({ type: 'text' })
  name: string;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  /** Creation order within the tenant, for keyset paging (`GET /v1/accounts`); set by the database. */
  @Column({ type: 'bigint', insert: false, update: false })
  seq?: string;
}
