/**
 * Every NATS subject of the system. Services subscribe to `<prefix><subject>`, where the prefix comes
 * from configuration (`NATS_SUBJECT_PREFIX`), so parallel runs never answer each other.
 */
export const Subjects = {
  oms: {
    ping: 'oms.ping',
    shipments: {
      list: 'oms.shipments.list',
      create: 'oms.shipments.create',
      get: 'oms.shipments.get',
      update: 'oms.shipments.update',
    },
  },
  dms: {
    ping: 'dms.ping',
  },
} as const;

type Leaves<T> = T extends string ? T : { [K in keyof T]: Leaves<T[K]> }[keyof T];
export type Subject = Leaves<typeof Subjects>;

/** NATS headers the gateway sets on every request. */
export const Headers = {
  requestId: 'x-request-id',
} as const;
