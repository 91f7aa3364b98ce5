import { Injectable } from '@nestjs/common';
import { type Alert, type AlertRequest, ErrorCode, type ItemPage, type ListAlertsRequest } from '@tracking/contracts';
import { DomainError } from '@tracking/core';
import { AlertLifecycle, toAlert } from './alert-lifecycle.js';
import { AlertRepository } from './alert.repository.js';

/** What clients ask of alerts: list, get, acknowledge. The evaluation writes them through `EvaluationStore`. */
@Injectable()
export class AlertsService {
  constructor(
    private readonly alerts: AlertRepository,
    private readonly lifecycle: AlertLifecycle,
  ) {}

  async list(request: ListAlertsRequest): Promise<ItemPage<Alert>> {
    const { rows, metadata } = await this.alerts.findPage(request, request.page, request.filters);
    return { items: rows.map(toAlert), metadata };
  }

  async get(request: AlertRequest): Promise<Alert> {
    const alert = await this.alerts.findOne(request, request.alertId);
    if (!alert) throw alertNotFound(request.alertId);
    return toAlert(alert);
  }

  /**
   * Sets `acknowledgedAt` and emits `alert.acknowledged`, in one transaction, the first time; later calls
   * change nothing and emit nothing (the first `acknowledgedAt` stays). Open or closed alike.
   */
  async acknowledge(request: AlertRequest): Promise<void> {
    await this.alerts.transaction(async (manager) => {
      if (await this.lifecycle.acknowledge(manager, request, request.alertId)) return;
      // In the same transaction: a second connection per waiting call could exhaust the pool.
      if (!(await this.alerts.findOne(request, request.alertId, manager))) throw alertNotFound(request.alertId);
    });
  }
}

function alertNotFound(id: string): DomainError {
  return new DomainError(ErrorCode.AlertNotExists, `Alert ${id} does not exist in this account.`);
}
