import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { EndpointPool } from '../../src/chain/endpoints/pool.ts'
import { DependencyHealth } from '../../src/config/dependency-health.ts'
import { startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { waitFor } from '../../src/dev/process.ts'
import { startRpcProxy, type RpcProxy } from '../../src/dev/rpc-call-counter.ts'
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts'
import { rpc } from '../../chaos/rpc.ts'

/**
 * A chain with one RPC endpoint, as most operators run: the endpoint behind a TCP proxy the test cuts,
 * behind a JSON-RPC proxy that counts the calls the pool makes.
 */
describe('one endpoint: the head read once for every reader, no probe while it answers', () => {
  let anvil: Anvil
  let cutter: TcpProxy
  let counter: RpcProxy
  let pool: EndpointPool | undefined
  const log = { warn: () => undefined, info: () => undefined }

  beforeAll(async () => {
    anvil = await startAnvil()
    cutter = await startTcpProxy(Number(new URL(anvil.rpcUrl).port))
    counter = await startRpcProxy({ rpcUrl: cutter.url, wsUrl: cutter.url.replace('http', 'ws') })
  })

  afterEach(async () => {
    cutter.restore()
    await pool?.close()
    pool = undefined
  })

  afterAll(async () => {
    await counter?.stop()
    await cutter?.close()
    await anvil?.stop()
  })

  async function openPool(pollIntervalMs: number): Promise<EndpointPool> {
    pool = new EndpointPool({
      chainId: anvil.chainId,
      label: `chain ${anvil.chainId}`,
      endpoints: [{ url: counter.httpUrl, sendOnly: false, setting: 'RPC_URL' }],
      healthOf: (endpoint) =>
        new DependencyHealth({
          dependency: 'the RPC endpoint',
          setting: endpoint.setting,
          url: endpoint.url,
          log,
          reportEveryMs: 60_000,
        }),
      probeIntervalMs: 100,
      pollIntervalMs,
    })
    await pool.start()
    return pool
  }

  const calls = (method: string) => counter.snapshot().calls[method] ?? 0

  it('asks its only endpoint for no head while it answers', async () => {
    const before = calls('eth_blockNumber')
    const opened = await openPool(1_000)
    await new Promise((resolveLater) => setTimeout(resolveLater, 500))
    expect(calls('eth_blockNumber') - before).toBe(0)
    expect(opened.state()).toBe('ok')
  })

  it('probes its only endpoint once reads took it out, and lets it back', async () => {
    const opened = await openPool(1_000)
    cutter.cut()
    for (let read = 0; read < 2; read++)
      await opened.request('eth_chainId', []).catch(() => undefined)
    expect(opened.state()).toBe('down')
    cutter.restore()
    await waitFor('the endpoint back in the pool', async () => opened.state() === 'ok', 5_000)
  })

  it('reads the latest block once for the readers of half a poll interval, and joins a read under way', async () => {
    const opened = await openPool(1_000)
    const before = calls('eth_getBlockByNumber')
    const [first, second] = await Promise.all([opened.latestHeader(), opened.latestHeader()])
    const third = await opened.latestHeader()
    expect(calls('eth_getBlockByNumber') - before).toBe(1)
    expect(second).toBe(first)
    expect(third).toBe(first)
    await new Promise((resolveLater) => setTimeout(resolveLater, 550))
    await opened.latestHeader()
    expect(calls('eth_getBlockByNumber') - before).toBe(2)
  })

  it('answers with a notified head without a read, and keeps the newer of two', async () => {
    const opened = await openPool(60_000)
    const read = (await opened.latestHeader()) as { number: string; hash: string }
    const before = calls('eth_getBlockByNumber')
    const next = { number: `0x${(Number(read.number) + 1).toString(16)}`, hash: '0x01' }
    opened.noteLatestBlock(next)
    opened.noteLatestBlock(read)
    expect(await opened.latestHeader()).toBe(next)
    expect(calls('eth_getBlockByNumber') - before).toBe(0)
  })

  /** Mines a block `secondsLater` than the head's time (anvil mines only when told here). */
  async function mineAfter(secondsLater: number): Promise<void> {
    const head = await rpc<{ timestamp: string }>(anvil.rpcUrl, 'eth_getBlockByNumber', [
      'latest',
      false,
    ])
    await rpc(anvil.rpcUrl, 'evm_mine', [Number(head.timestamp) + secondsLater])
  }

  it('on 12 s blocks, reads no head until the next block may be there', async () => {
    const opened = await openPool(1_000)
    const number = async () => Number(((await opened.latestHeader()) as { number: string }).number)
    // Nine heads read, 12 s apart by the chain's clock: the pool knows the chain keeps 12 s blocks.
    let paced = 0
    for (let read = 0; read < 9; read++) {
      await mineAfter(12)
      await new Promise((resolveLater) => setTimeout(resolveLater, 600))
      paced = await number()
    }
    const before = calls('eth_getBlockByNumber')
    await mineAfter(12)
    await new Promise((resolveLater) => setTimeout(resolveLater, 600))
    // Past half a poll interval, but the next block is not due for about 11 s: the head answers.
    expect(await number()).toBe(paced)
    expect(calls('eth_getBlockByNumber') - before).toBe(0)
  }, 60_000)

  it('on 12 s blocks, takes a notified head as the latest until the next notification is late', async () => {
    const opened = await openPool(1_000)
    const read = (await opened.latestHeader()) as { number: string; timestamp: string }
    const header = (blocksLater: number) => ({
      number: `0x${(Number(read.number) + blocksLater).toString(16)}`,
      hash: `0x${blocksLater.toString(16).padStart(2, '0')}`,
      timestamp: `0x${(Number(read.timestamp) + 12 * blocksLater).toString(16)}`,
    })
    for (let notified = 1; notified <= 9; notified++) opened.noteLatestBlock(header(notified))
    const before = calls('eth_getBlockByNumber')
    await new Promise((resolveLater) => setTimeout(resolveLater, 600))
    expect(await opened.latestHeader()).toEqual(header(9))
    expect(calls('eth_getBlockByNumber') - before).toBe(0)
  })
})
