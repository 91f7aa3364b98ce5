import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, type Repository } from 'typeorm';
import { SigningKeyEntity } from './signing-key.entity.js';

@Injectable()
export class SigningKeyRepository {
  constructor(@InjectRepository(SigningKeyEntity) private readonly keys: Repository<SigningKeyEntity>) {}

  /** Keys that still verify tokens: active, or retired less than `keepRetiredMs` ago. */
  findUsable(keepRetiredMs: number): Promise<SigningKeyEntity[]> {
    return this.keys
      .createQueryBuilder('k')
      .where('k.retired_at IS NULL OR k.retired_at > :since', { since: new Date(Date.now() - keepRetiredMs) })
      .orderBy('k.created_at', 'DESC')
      .getMany();
  }

  /**
   * Inserts `next` as the active key and retires the others, in one transaction serialised by an
   * advisory lock; with `onlyIfNone`, does nothing when an active key exists (first start of replicas).
   */
  async activate(next: SigningKeyEntity, onlyIfNone: boolean): Promise<void> {
    await this.keys.manager.transaction(async (manager) => {
      await manager.query("SELECT pg_advisory_xact_lock(hashtext('signing-keys'))");
      if (onlyIfNone && (await manager.countBy(SigningKeyEntity, { retiredAt: IsNull() })) > 0) return;
      await manager.update(SigningKeyEntity, { retiredAt: IsNull() }, { retiredAt: new Date() });
      await manager.insert(SigningKeyEntity, next);
    });
  }
}
