import { Controller } from '@nestjs/common';
import { Payload } from '@nestjs/microservices';
import { type Alert, type AlertRequest, type ItemPage, type ListAlertsRequest, type ListVisitsRequest, Subjects, type Visit } from '@tracking/contracts';
import { Handles } from '@tracking/messaging';
import { AlertsService } from './alerts.service.js';
import { VisitsService } from './visits.service.js';

@Controller()
export class AlertsHandler {
  constructor(
    private readonly alerts: AlertsService,
    private readonly visits: VisitsService,
  ) {}

  @Handles(Subjects.oms.alerts.list)
  list(@Payload() request: ListAlertsRequest): Promise<ItemPage<Alert>> {
    return this.alerts.list(request);
  }

  @Handles(Subjects.oms.alerts.get)
  get(@Payload() request: AlertRequest): Promise<Alert> {
    return this.alerts.get(request);
  }

  @Handles(Subjects.oms.alerts.acknowledge)
  async acknowledge(@Payload() request: AlertRequest): Promise<void> {
    await this.alerts.acknowledge(request);
  }

  @Handles(Subjects.oms.visits.list)
  listVisits(@Payload() request: ListVisitsRequest): Promise<ItemPage<Visit>> {
    return this.visits.list(request);
  }
}
