import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { PageRequest } from '@tracking/contracts';
import { CursorCodec, cursorBinding, keysetPage, lockInsertOrder, type KeysetPage } from '@tracking/paging';
import type { Repository } from 'typeorm';
import { AccountEntity } from './account.entity.js';
import { TenantEntity } from './tenant.entity.js';

/** Tenants and the accounts they own. */
@Injectable()
export class TenantRepository {
  constructor(
    @InjectRepository(TenantEntity) private readonly tenants: Repository<TenantEntity>,
    @InjectRepository(AccountEntity) private readonly accounts: Repository<AccountEntity>,
    private readonly cursors: CursorCodec,
  ) {}

  async insertTenant(tenant: TenantEntity): Promise<void> {
    await this.tenants.insert(tenant);
  }

  findTenant(id: string): Promise<TenantEntity | null> {
    return this.tenants.findOneBy({ id });
  }

  async countTenants(): Promise<number> {
    return this.tenants.count();
  }

  /** Takes the account's place in its tenant's creation order under the tenant's insert lock (keyset paging, rule 3). */
  async insertAccount(account: AccountEntity): Promise<void> {
    await this.accounts.manager.transaction(async (manager) => {
      await lockInsertOrder(manager, `accounts:${account.tenantId}`);
      await manager.insert(AccountEntity, account);
    });
  }

  /**
   * One page of the tenant's accounts, oldest first: every account when `ids` is `'*'`, else those listed.
   * `applicationId` binds the cursor to the caller, whose roles decide what the collection holds.
   */
  findAccountPage(tenantId: string, applicationId: string, ids: string[] | '*', page: PageRequest): Promise<KeysetPage<AccountEntity>> {
    const query = this.accounts.createQueryBuilder('a').where('a.tenant_id = :tenantId', { tenantId });
    if (ids !== '*') query.andWhere('a.id = ANY(CAST(:ids AS uuid[]))', { ids });
    return keysetPage(query, {
      seqColumn: 'a.seq',
      seqProperty: 'seq',
      page,
      codec: this.cursors,
      binding: cursorBinding('accounts', { tenantId, applicationId }),
    });
  }

  findAccount(id: string): Promise<AccountEntity | null> {
    return this.accounts.findOneBy({ id });
  }

  findAccounts(tenantId: string, ids: string[]): Promise<AccountEntity[]> {
    return this.accounts.createQueryBuilder('a').where('a.tenant_id = :tenantId', { tenantId }).andWhere('a.id IN (:...ids)', { ids }).getMany();
  }
}
