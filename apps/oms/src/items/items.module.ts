import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { SetsModule } from '../sets/sets.module.js';
import { ItemEntity } from './item.entity.js';
import { ItemRepository } from './item.repository.js';
import { ItemsHandler } from './items.handler.js';
import { ItemsService } from './items.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([ItemEntity]), SetsModule],
  controllers: [ItemsHandler],
  providers: [ItemsService, ItemRepository],
})
export class ItemsModule {}
