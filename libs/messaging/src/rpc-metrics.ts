/**
 * What the NATS client and server report about each request/reply, by subject (the plain subject of
 * `@tracking/contracts`, without the environment prefix) and outcome (`ok` or the error code of the
 * reply). `ServiceMetrics` of `@tracking/observability` implements it with Prometheus histograms.
 */
export interface RpcMetrics {
  /** A call this process made, from sending the request to its reply or failure. */
  observeRpcClient(subject: string, outcome: string, seconds: number): void;
  /** A message this process handled, from receiving it to publishing the reply. */
  observeRpcServer(subject: string, outcome: string, seconds: number): void;
  /** A message handler started (+1) or replied (-1). */
  countRpcServerInFlight(subject: string, delta: 1 | -1): void;
}

/** The `outcome` label of a request that got its answer. */
export const RPC_OK = 'ok';
