import { type DynamicModule, Global, Module } from '@nestjs/common';
import { connectNats } from '@tracking/messaging';
import type { OmsConfig } from '../config.js';
import { DMS_NATS_CONNECTION, DmsClient } from './dms.client.js';

/** The client of the DMS, for every OMS feature that changes device links (assignments, sets, shipments). */
@Global()
@Module({})
export class DmsModule {
  static forRoot(config: OmsConfig): DynamicModule {
    return {
      module: DmsModule,
      providers: [
        {
          provide: DMS_NATS_CONNECTION,
          useFactory: () => connectNats(config, 'oms-dms-client'),
        },
        DmsClient,
      ],
      exports: [DmsClient],
    };
  }
}
