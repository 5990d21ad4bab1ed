import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PoolProvider } from '../../src/chain/endpoints/pool-provider.ts'
import { EndpointPool, RPC_UNAVAILABLE } from '../../src/chain/endpoints/pool.ts'
import { errorCodeOf, errorKindOf } from '../../src/config/errors.ts'
import { DependencyHealth } from '../../src/config/dependency-health.ts'
import { startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { waitFor } from '../../src/dev/process.ts'
import { chainCheck } from '../../src/health/checks.ts'
import { metricsText, watchEndpoints } from '../../src/metrics/index.ts'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts'

/** A pool over two endpoints of one anvil, the first behind a proxy the test cuts, and a third chain of its own. */
describe('endpoint pool', () => {
  let anvil: Anvil
  let behind: Anvil
  let proxy: TcpProxy
  let pool: EndpointPool
  const lines: string[] = []
  let unwatch: (() => void) | undefined

  beforeAll(async () => {
    anvil = await startAnvil()
    // Same chain id, its own blocks: it falls behind when the test mines on the first.
    behind = await startAnvil()
    proxy = await startTcpProxy(Number(new URL(anvil.rpcUrl).port))
    const log = {
      warn: (_fields: Record<string, unknown>, message: string) => lines.push(`warn ${message}`),
      info: (_fields: Record<string, unknown>, message: string) => lines.push(`info ${message}`),
    }
    pool = new EndpointPool({
      chainId: anvil.chainId,
      label: `chain ${anvil.chainId}`,
      endpoints: [
        { url: proxy.url, sendOnly: false, setting: 'TEST endpoint 1' },
        { url: anvil.rpcUrl, sendOnly: false, setting: 'TEST endpoint 2' },
        { url: behind.rpcUrl, sendOnly: true, setting: 'TEST endpoint 3' },
      ],
      healthOf: (endpoint) =>
        new DependencyHealth({
          dependency: 'the RPC endpoint',
          setting: endpoint.setting,
          url: endpoint.url,
          log,
          reportEveryMs: 60_000,
        }),
      probeIntervalMs: 200,
      maxLagBlocks: 5,
      pollIntervalMs: 100,
    })
    await pool.start()
    unwatch = watchEndpoints(anvil.chainId, pool.endpoints)
  })

  afterAll(async () => {
    unwatch?.()
    await pool?.close()
    await proxy?.close()
    await anvil?.stop()
    await behind?.stop()
  })

  it('reads from the first endpoint while both answer, and is ok', async () => {
    expect(pool.state()).toBe('ok')
    // The first unless the second answers a latency step (100 ms) faster: a loaded machine can slow
    // the proxied first that much. Read in one go with the order (no await between).
    const [first, second] = pool.endpoints.map((endpoint) =>
      Math.floor(endpoint.state.latencyMs / 100),
    )
    const order = pool.readOrder().map((endpoint) => endpoint.index)
    expect(order).toEqual(first! > second! ? [2, 1] : [1, 2])
    expect(await pool.head()).toBe(0)
    expect(await chainCheck(anvil.chainId, pool).check()).toBeUndefined()
  })

  it('fails a read over to the second endpoint when the first is cut, and says so once', async () => {
    const provider = new PoolProvider(pool, 100)
    try {
      proxy.cut()
      // Reads go on, through ethers and raw, while the first endpoint is away.
      for (let index = 0; index < 20; index++) {
        expect(await provider.getBlockNumber()).toBeGreaterThanOrEqual(0)
        expect(await pool.request<string>('eth_chainId', [])).toBe('0x7a69')
      }
      // Taken out by the reads that failed over, or by its probes (every 200 ms) when the second
      // endpoint answered a latency step faster and so took every read (a loaded machine).
      await waitFor('the first endpoint taken out', async () => pool.state() === 'degraded', 30_000)
      expect(await chainCheck(anvil.chainId, pool).check()).toBe(
        'degraded: 1 of 2 RPC endpoints left (endpoint 1 not answering)',
      )
      expect(pool.endpoints[0]!.state.up).toBe(false)
      // Per endpoint, by chain and place in the list, never by URL.
      const metrics = await metricsText()
      expect(metrics).toContain('feedrunner_rpc_endpoint_up{chain="31337",endpoint="1"} 0')
      expect(metrics).toContain('feedrunner_rpc_endpoint_up{chain="31337",endpoint="2"} 1')
      expect(metrics).toMatch(
        /feedrunner_rpc_endpoint_errors_total\{chain="31337",endpoint="1"\} [1-9]/,
      )
      expect(metrics).not.toContain(String(proxy.port))
      expect(lines.filter((line) => line.includes('TEST endpoint 1'))).toHaveLength(1)
      expect(lines[0]).toMatch(
        /^warn the RPC endpoint is not answering \(TEST endpoint 1 127\.0\.0\.1:\d+\): ECONN/,
      )

      proxy.restore()
      await waitFor('the first endpoint back', async () => pool.endpoints[0]!.state.up, 10_000)
      expect(pool.state()).toBe('ok')
      expect(lines.filter((line) => line.includes('TEST endpoint 1'))).toHaveLength(2)
      expect(lines[1]).toMatch(/^info the RPC endpoint answers again \(TEST endpoint 1 .*\) after/)
    } finally {
      provider.destroy()
    }
  })

  it('takes out an endpoint whose head falls more than max_lag_blocks behind, and lets it back when it catches up', async () => {
    const logged: string[] = []
    const lagPool = new EndpointPool({
      chainId: anvil.chainId,
      label: 'the lag test chain',
      endpoints: [
        { url: behind.rpcUrl, sendOnly: false, setting: 'LAG endpoint 1' },
        { url: anvil.rpcUrl, sendOnly: false, setting: 'LAG endpoint 2' },
      ],
      healthOf: (endpoint) =>
        new DependencyHealth({
          dependency: 'the RPC endpoint',
          setting: endpoint.setting,
          url: endpoint.url,
          log: {
            warn: (_f, message) => logged.push(message),
            info: (_f, message) => logged.push(message),
          },
          reportEveryMs: 60_000,
        }),
      probeIntervalMs: 100,
      maxLagBlocks: 5,
      pollIntervalMs: 100,
    })
    await lagPool.start()
    try {
      const mine = (url: string, blocks: number) =>
        fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'anvil_mine', params: [blocks] }),
        })
      await mine(anvil.rpcUrl, 10)
      await waitFor('the lagging endpoint out', async () => !lagPool.endpoints[0]!.state.up, 10_000)
      expect(lagPool.readOrder()[0]!.index).toBe(2)
      expect(logged[0]).toMatch(
        /LAG endpoint 1 .*blocks behind the chain's best endpoint \(more than 5\)/,
      )
      await mine(behind.rpcUrl, 12)
      await waitFor('the endpoint back', async () => lagPool.endpoints[0]!.state.up, 10_000)
      expect(lagPool.readOrder()[0]!.index).toBe(1)
    } finally {
      await lagPool.close()
    }
  })

  it('is down with no endpoint to read from, and reads say which chain', async () => {
    proxy.cut()
    await anvil.process.stop()
    await waitFor('both readers out', async () => pool.state() === 'down', 10_000)
    await expect(chainCheck(anvil.chainId, pool).check()).rejects.toThrow(
      /down: no RPC endpoint of chain 31337 answers/,
    )
    await expect(pool.request('eth_blockNumber', [])).rejects.toThrow(
      'eth_blockNumber: no RPC endpoint of chain 31337 answers (3 configured)',
    )
    // A refused connection underneath, as a Redis away would show: the code tells them apart, read
    // through the provider the listener and the recovery use too.
    const provider = new PoolProvider(pool, 100)
    const failure: unknown = await provider.getBlockNumber().catch((error: unknown) => error)
    provider.destroy()
    expect(errorCodeOf(failure)).toBe(RPC_UNAVAILABLE)
    expect(errorKindOf(failure)).toBe('unavailable')
    // The send-only endpoint still takes transactions (a broadcast does not need the readers).
    const [outcome] = await pool.broadcastBatch([['eth_sendRawTransaction', ['0x00']]])
    expect(outcome?.ok).toBe(false)
  })
})
