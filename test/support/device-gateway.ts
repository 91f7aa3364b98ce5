import { createLogger } from '@tracking/core';
import { ServiceMetrics } from '@tracking/observability';
import { readDeviceGatewayConfig } from '../../apps/device-gateway/src/config.js';
import { type StartedDeviceGateway, startDeviceGateway } from '../../apps/device-gateway/src/device-gateway.js';
import type { ListenerFactory } from '../../apps/device-gateway/src/listeners.js';
import type { TestStack } from './stack.js';

/** A device gateway on the stack's NATS prefix and Redis, its listeners on free ports. */
export interface TestDeviceGateway {
  gateway: StartedDeviceGateway;
  metrics: ServiceMetrics;
  /** The first address of the listener `name` (`http://127.0.0.1:41234`). */
  address(name: string): string;
  stop(): Promise<void>;
}

/**
 * Starts the device gateway in this process against `stack` (its NATS subject prefix, Redis prefix and
 * rate limits), every port 0 unless `env` says otherwise. `listeners` defaults to every registered one.
 */
export async function startTestDeviceGateway(stack: TestStack, env: Record<string, string> = {}, listeners?: ListenerFactory[]): Promise<TestDeviceGateway> {
  const config = readDeviceGatewayConfig({
    ...stack.env,
    DEVICE_HTTP_PORT: '0',
    DEVICE_MQTT_PORT: '0',
    DEVICE_MQTTS_PORT: '0',
    DEVICE_TELTONIKA_PORT: '0',
    DEVICE_BATCH_MAX_WAIT_MS: '5',
    ...env,
  });
  const metrics = new ServiceMetrics('device-gateway');
  const gateway = await startDeviceGateway(config, createLogger('device-gateway', process.env.LOG_LEVEL ?? 'silent'), metrics, listeners);
  return {
    gateway,
    metrics,
    address(name) {
      const found = gateway.listening.find((listener) => listener.name === name)?.addresses[0];
      if (!found) throw new Error(`no listener ${name}`);
      return found;
    },
    stop: () => gateway.stop(),
  };
}
