import { type DynamicModule, Global, Module } from '@nestjs/common';
import { connect } from '@nats-io/transport-node';
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
          useFactory: () => connect({ servers: config.NATS_URL.split(','), name: 'oms-dms-client', maxReconnectAttempts: -1, noAsyncTraces: true }),
        },
        DmsClient,
      ],
      exports: [DmsClient],
    };
  }
}
