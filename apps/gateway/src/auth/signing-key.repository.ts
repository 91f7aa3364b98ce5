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

  /**
   * Replaces the stored private form of every key not yet sealed by the KEK `currentKekId` (plaintext,
   * or sealed by an older KEK) with what `reseal` makes of it, in one transaction under the same lock
   * as `activate`; the number of keys changed. Keys for which `reseal` gives null stay as they are.
   */
  async reseal(
    currentKekId: string,
    reseal: (key: SigningKeyEntity) => Pick<SigningKeyEntity, 'kekId' | 'encryptedPrivateJwk'> | null,
  ): Promise<number> {
    return this.keys.manager.transaction(async (manager) => {
      await manager.query("SELECT pg_advisory_xact_lock(hashtext('signing-keys'))");
      const stale = await manager
        .createQueryBuilder(SigningKeyEntity, 'k')
        .where('k.kek_id IS DISTINCT FROM :current', { current: currentKekId })
        .getMany();
      let changed = 0;
      for (const key of stale) {
        const sealed = reseal(key);
        if (sealed === null) continue;
        await manager.update(SigningKeyEntity, { kid: key.kid }, { ...sealed, privateJwk: null });
        changed++;
      }
      return changed;
    });
  }
}
