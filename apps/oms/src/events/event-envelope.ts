import { EVENT_TYPES, type EventEnvelope, type EventType } from '@tracking/contracts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * An envelope from the events stream, checked enough to be stored safely: ids that are UUIDs, a known
 * type, a date; anything else throws (the consumer terminates the message and logs it).
 */
export function decodeEventEnvelope(data: Uint8Array): EventEnvelope {
  const value = JSON.parse(new TextDecoder().decode(data)) as Partial<EventEnvelope> | null;
  const event = value?.event;
  if (
    typeof value?.tenantId !== 'string' ||
    !UUID.test(value.tenantId) ||
    typeof event?.id !== 'string' ||
    !UUID.test(event.id) ||
    typeof event.accountId !== 'string' ||
    !UUID.test(event.accountId) ||
    !EVENT_TYPES.includes(event.type as EventType) ||
    typeof event.occurredAt !== 'string' ||
    Number.isNaN(Date.parse(event.occurredAt))
  ) {
    throw new Error('not an event envelope');
  }
  return value as EventEnvelope;
}
