import { ParameterIssue, type ShipmentConditions, type ShipmentConditionsInput } from '@tracking/contracts';
import { DomainError } from '@tracking/core';

/**
 * The conditions as stored and shown: `minDurationSeconds` 0 and a missing bound null when left out, the
 * parts the client left out absent. 400 when a range has no bound (Required) or its minimum is above its
 * maximum (OutOfRange). The gateway has checked each value's type and bounds.
 */
export function normalizeConditions(input: ShipmentConditionsInput | null | undefined): ShipmentConditions | null {
  if (input === undefined || input === null) return null;
  const conditions: ShipmentConditions = {};
  if (input.temperature !== undefined) {
    const { minC = null, maxC = null, minDurationSeconds = 0 } = input.temperature;
    checkRange('conditions.temperature', 'minC', minC, 'maxC', maxC);
    conditions.temperature = { minC, maxC, minDurationSeconds };
  }
  if (input.humidity !== undefined) {
    const { minPercent = null, maxPercent = null, minDurationSeconds = 0 } = input.humidity;
    checkRange('conditions.humidity', 'minPercent', minPercent, 'maxPercent', maxPercent);
    conditions.humidity = { minPercent, maxPercent, minDurationSeconds };
  }
  if (input.shock !== undefined) conditions.shock = { maxG: input.shock.maxG };
  if (input.light !== undefined) conditions.light = { maxLux: input.light.maxLux };
  if (input.battery !== undefined) conditions.battery = { minPercent: input.battery.minPercent };
  if (input.signalLoss !== undefined) conditions.signalLoss = { maxSilenceSeconds: input.signalLoss.maxSilenceSeconds };
  return jsonbOrdered(conditions);
}

function checkRange(path: string, minName: string, min: number | null, maxName: string, maxValue: number | null): void {
  if (min === null && maxValue === null) {
    throw DomainError.invalidParameter(path, ParameterIssue.Required, `${path} needs ${minName}, ${maxName} or both.`);
  }
  if (min !== null && maxValue !== null && min > maxValue) {
    throw DomainError.invalidParameter(`${path}.${minName}`, ParameterIssue.OutOfRange, `${path}.${minName} must not be above ${path}.${maxName}.`);
  }
}

/**
 * `value` with every object's keys in the order PostgreSQL's jsonb keeps them (shorter keys first, then
 * by bytes), so that the answer of a write (`toShipment`) and the stored text of a read (`api_json`,
 * which writes `conditions` as jsonb text) list the keys alike.
 */
export function jsonbOrdered<T>(value: T): T {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const keys = Object.keys(value).sort((a, b) => a.length - b.length || Buffer.compare(Buffer.from(a), Buffer.from(b)));
  return Object.fromEntries(keys.map((key) => [key, jsonbOrdered((value as Record<string, unknown>)[key])])) as T;
}
