import type { Counter, Gauge } from 'prom-client'
import { metricsRegistry, promClient } from './registry.ts'

/**
 * Metrics of each chain's RPC endpoints, read from the endpoint pools at scrape time. Labels: the
 * chain id and the endpoint's place in the chain's list (`1`, `2`, ...), never its URL (it may carry
 * an API key).
 */

/** What the metrics read of one endpoint (src/chain/endpoints/endpoint.ts). */
export interface EndpointSource {
  readonly index: number
  readonly state: { readonly up: boolean; readonly lag: number; readonly errors: number }
}

interface PoolSource {
  chain: string
  endpoints: readonly EndpointSource[]
  /** Errors counted at the previous scrape, per endpoint. */
  last: Map<number, number>
}

const SOURCES_KEY = Symbol.for('feedrunner.metrics.endpoint-pools')
const holder = globalThis as typeof globalThis & { [SOURCES_KEY]?: Set<PoolSource> }
const pools: Set<PoolSource> = (holder[SOURCES_KEY] ??= new Set())

const LABELS = ['chain', 'endpoint'] as const

function labelsOf(pool: PoolSource, endpoint: EndpointSource) {
  return { chain: pool.chain, endpoint: String(endpoint.index) }
}

if (!metricsRegistry.getSingleMetric('feedrunner_rpc_endpoint_up'))
  new promClient.Gauge({
    name: 'feedrunner_rpc_endpoint_up',
    help: "1 while an RPC endpoint is in its chain's pool (answering and keeping up), 0 while it is out; by chain and endpoint number",
    labelNames: LABELS,
    registers: [metricsRegistry],
    collect(this: Gauge) {
      this.reset()
      for (const pool of pools)
        for (const endpoint of pool.endpoints)
          this.set(labelsOf(pool, endpoint), endpoint.state.up ? 1 : 0)
    },
  })

if (!metricsRegistry.getSingleMetric('feedrunner_rpc_endpoint_head_lag_blocks'))
  new promClient.Gauge({
    name: 'feedrunner_rpc_endpoint_head_lag_blocks',
    help: "Blocks an RPC endpoint's head was behind its chain's best endpoint at the last probe",
    labelNames: LABELS,
    registers: [metricsRegistry],
    collect(this: Gauge) {
      this.reset()
      for (const pool of pools)
        for (const endpoint of pool.endpoints)
          this.set(labelsOf(pool, endpoint), endpoint.state.lag)
    },
  })

if (!metricsRegistry.getSingleMetric('feedrunner_rpc_endpoint_errors_total'))
  new promClient.Counter({
    name: 'feedrunner_rpc_endpoint_errors_total',
    help: 'Calls and probes to an RPC endpoint that failed for the endpoint (no answer, HTTP error, a head too far behind)',
    labelNames: LABELS,
    registers: [metricsRegistry],
    collect(this: Counter) {
      for (const pool of pools)
        for (const endpoint of pool.endpoints) {
          const previous = pool.last.get(endpoint.index) ?? 0
          this.inc(labelsOf(pool, endpoint), Math.max(0, endpoint.state.errors - previous))
          pool.last.set(endpoint.index, Math.max(previous, endpoint.state.errors))
        }
    },
  })

/** Reads a chain's endpoints at every scrape until the returned function is called. */
export function watchEndpoints(chainId: number, endpoints: readonly EndpointSource[]): () => void {
  const source: PoolSource = { chain: String(chainId), endpoints, last: new Map() }
  pools.add(source)
  return () => void pools.delete(source)
}
