import { Module } from '@nestjs/common';
import { ShipmentStoreModule } from '../shipments/shipment-store.module.js';
import { AlertStoreModule } from './alert-store.module.js';
import { AlertsHandler } from './alerts.handler.js';
import { AlertsService } from './alerts.service.js';
import { VisitsService } from './visits.service.js';

/** Alerts and visits on the OMS service: `GET /alerts`, acknowledge, `GET /shipments/{id}/visits`. */
@Module({
  imports: [AlertStoreModule, ShipmentStoreModule],
  controllers: [AlertsHandler],
  providers: [AlertsService, VisitsService],
})
export class AlertsModule {}
