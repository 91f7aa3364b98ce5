import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { ApplicationEntity } from './application.entity.js';

@Injectable()
export class ApplicationRepository {
  constructor(@InjectRepository(ApplicationEntity) private readonly applications: Repository<ApplicationEntity>) {}

  async insert(application: ApplicationEntity): Promise<void> {
    await this.applications.insert(application);
  }

  findById(id: string): Promise<ApplicationEntity | null> {
    return this.applications.findOneBy({ id });
  }

  /** Applies `changes` and tells whether the application existed. */
  async update(id: string, changes: Partial<Pick<ApplicationEntity, 'status' | 'secretHash'>>): Promise<boolean> {
    const result = await this.applications.update({ id }, { ...changes, updatedAt: new Date() });
    return (result.affected ?? 0) > 0;
  }
}
