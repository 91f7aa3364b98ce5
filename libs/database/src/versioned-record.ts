import { Column, PrimaryColumn } from 'typeorm';

/**
 * The columns every pageable, versioned table has: a UUID id, the commit-ordered `seq` that keyset
 * pages follow, the version behind the `ETag`, and the two timestamps. Entities extend it.
 */
export abstract class VersionedRecord {
  @PrimaryColumn({ type: 'uuid' })
  id: string;

  /** Commit-ordered position within the paging scope; a string because it is a bigint. */
  @Column({ type: 'bigint', insert: false, update: false })
  seq: string;

  @Column({ type: 'integer' })
  version: number;

  @Column({ name: 'created_at', type: 'timestamptz' })
  createdAt: Date;

  @Column({ name: 'updated_at', type: 'timestamptz' })
  updatedAt: Date;
}
