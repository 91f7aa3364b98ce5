import { type DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { CursorCodec } from '@tracking/paging';
import type { DataSource } from 'typeorm';
import type { DmsConfig } from './config.js';
import { DevicesModule } from './devices/devices.module.js';
import { ReleasedTargets } from './devices/released-targets.js';
import { PingHandler } from './health/ping.handler.js';
import { OperationsModule } from './operations/operations.module.js';

@Module({})
export class DmsModule {
  static forRoot(config: DmsConfig, dataSource: DataSource): DynamicModule {
    return {
      module: DmsModule,
      global: true,
      imports: [TypeOrmModule.forRootAsync({ useFactory: () => ({}), dataSourceFactory: async () => dataSource }), DevicesModule, OperationsModule],
      controllers: [PingHandler],
      providers: [
        { provide: CursorCodec, useValue: new CursorCodec(config.CURSOR_SECRET) },
        { provide: ReleasedTargets, useValue: new ReleasedTargets(config.DMS_CLOCK_SKEW_MS) },
      ],
      exports: [CursorCodec, ReleasedTargets],
    };
  }
}
