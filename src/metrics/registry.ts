import client, { type Counter, type Gauge, type Histogram } from 'prom-client'

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
  // Once per registry: a second call (two stacks in one test process, or the framework's own default
  // metrics registered first) would throw on the first metric it finds registered.
  if (metricsRegistry.getSingleMetric('process_cpu_user_seconds_total')) return
  client.collectDefaultMetrics({ register: metricsRegistry })
}

/**
 * Removes prom-client's process and Node.js metrics from the registry, so the EA framework, which
 * registers them itself when its metrics are on, does not meet them there (it would throw).
 */
export function releaseProcessMetrics(): void {
  for (const metric of metricsRegistry.getMetricsAsArray())
    if (metric.name.startsWith('process_') || metric.name.startsWith('nodejs_'))
      metricsRegistry.removeSingleMetric(metric.name)
}

export const METRICS_CONTENT_TYPE = metricsRegistry.contentType

export { client as promClient }

/**
 * A metric registered once per process: a module loaded twice in one process (test isolation) gets
 * the metric registered the first time.
 */
export function counter(
  name: string,
  help: string,
  labelNames: readonly string[],
  collect?: (this: Counter) => void | Promise<void>,
): Counter {
  const existing = metricsRegistry.getSingleMetric(name)
  if (existing) return existing as Counter
  return new client.Counter({
    name,
    help,
    labelNames,
    registers: [metricsRegistry],
    ...(collect ? { collect } : {}),
  })
}

export function gauge(
  name: string,
  help: string,
  labelNames: readonly string[],
  collect: (this: Gauge) => void | Promise<void>,
): Gauge {
  const existing = metricsRegistry.getSingleMetric(name)
  if (existing) return existing as Gauge
  return new client.Gauge({ name, help, labelNames, registers: [metricsRegistry], collect })
}

export function histogram(
  name: string,
  help: string,
  labelNames: readonly string[],
  buckets: number[],
): Histogram {
  const existing = metricsRegistry.getSingleMetric(name)
  if (existing) return existing as Histogram
  return new client.Histogram({ name, help, labelNames, buckets, registers: [metricsRegistry] })
}
