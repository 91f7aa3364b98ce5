import { type DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CursorCodec } from '@tracking/paging';
import type { DataSource } from 'typeorm';
import type { OmsConfig } from './config.js';
import { AssignmentsModule } from './assignments/assignments.module.js';
import { DmsModule } from './dms/dms.module.js';
import { PingHandler } from './health/ping.handler.js';
import { ItemsModule } from './items/items.module.js';
import { PointsOfInterestModule } from './points-of-interest/points-of-interest.module.js';
import { SetsModule } from './sets/sets.module.js';
import { ShipmentsModule } from './shipments/shipments.module.js';

@Module({})
export class OmsModule {
  static forRoot(config: OmsConfig, dataSource: DataSource): DynamicModule {
    return {
      module: OmsModule,
      global: true,
      imports: [
        TypeOrmModule.forRootAsync({
          useFactory: () => ({}),
          dataSourceFactory: async () => dataSource,
        }),
        DmsModule.forRoot(config),
        ShipmentsModule,
        PointsOfInterestModule,
        SetsModule,
        ItemsModule,
        AssignmentsModule,
      ],
      controllers: [PingHandler],
      providers: [{ provide: CursorCodec, useValue: new CursorCodec(config.CURSOR_SECRET) }],
      exports: [CursorCodec],
    };
  }
}
