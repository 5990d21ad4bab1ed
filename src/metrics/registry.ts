import client from 'prom-client'

/**
 * The one Prometheus registry of a feedrunner process: prom-client's default registry, which is also
 * the one the EA framework registers its own metrics in and serves on METRICS_PORT. feedrunner's
 * metrics therefore appear on the framework's metrics port without a second server; a process that
 * runs no adapter serves the same registry on OPERATIONS_PORT (src/health/server.ts).
 */
export const metricsRegistry: client.Registry = client.register

/** The Prometheus text of every metric in the process, as the metrics ports serve it. */
export function metricsText(): Promise<string> {
  return metricsRegistry.metrics()
}

/**
 * prom-client's process and Node.js metrics (resident memory, heap by space, event loop lag, GC), as
 * the EA framework collects them in an adapter process; a process without the adapter calls this.
 */
export function collectProcessMetrics(): void {
  if (metricsRegistry.getSingleMetric('process_resident_memory_bytes')) return
  client.collectDefaultMetrics({ register: metricsRegistry })
}

export const METRICS_CONTENT_TYPE = metricsRegistry.contentType

export { client as promClient }
