import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { AccountEntity } from './account.entity.js';
import { TenantEntity } from './tenant.entity.js';

/** Tenants and the accounts they own. */
@Injectable()
export class TenantRepository {
  constructor(
    @InjectRepository(TenantEntity) private readonly tenants: Repository<TenantEntity>,
    @InjectRepository(AccountEntity) private readonly accounts: Repository<AccountEntity>,
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

  async insertAccount(account: AccountEntity): Promise<void> {
    await this.accounts.insert(account);
  }

  findAccount(id: string): Promise<AccountEntity | null> {
    return this.accounts.findOneBy({ id });
  }

  findAccounts(tenantId: string, ids: string[]): Promise<AccountEntity[]> {
    return this.accounts.createQueryBuilder('a').where('a.tenant_id = :tenantId', { tenantId }).andWhere('a.id IN (:...ids)', { ids }).getMany();
  }
}
