import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { buildDemoCases, type DemoCase } from '../../src/dev/demo.ts'
import { waitForFulfilments } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  oracleResponsesSince,
  requestsOfCases,
  sendPaced,
  startPart,
  stopPart,
  wrongValues,
  type PartProcess,
} from './support.ts'

/** How far the lagging backend is behind the one that told the head. */
const LAG_BLOCKS = 2
const REQUESTS = 10

interface RpcCall {
  jsonrpc: '2.0'
  id: number | string
  method: string
  params?: unknown[]
}

/**
 * One RPC_URL, two backends behind it, as a load balancer gives: every other eth_getLogs goes to a
 * backend LAG_BLOCKS behind, which answers a range past its head as the execution API says a node
 * must ("block range extends beyond current head block"). Everything else goes to the chain as it is.
 */
async function startLaggingBalancer(
  chainUrl: string,
): Promise<{ url: string; refusals: () => number; close: () => Promise<void> }> {
  let getLogsCalls = 0
  let refusals = 0
  const forward = async (call: RpcCall): Promise<unknown> => {
    const answer = await fetch(chainUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(call),
    })
    return answer.json()
  }
  const answer = async (call: RpcCall): Promise<unknown> => {
    if (call.method !== 'eth_getLogs' || getLogsCalls++ % 2 === 0) return forward(call)
    const head = (await forward({ jsonrpc: '2.0', id: 0, method: 'eth_blockNumber' })) as {
      result: string
    }
    const filter = (call.params?.[0] ?? {}) as { toBlock?: string }
    if (Number(filter.toBlock) <= Number(head.result) - LAG_BLOCKS) return forward(call)
    refusals++
    return {
      jsonrpc: '2.0',
      id: call.id,
      error: { code: -32602, message: 'block range extends beyond current head block' },
    }
  }
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      void (async () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RpcCall | RpcCall[]
        const out = Array.isArray(body) ? await Promise.all(body.map(answer)) : await answer(body)
        response.writeHead(200, { 'content-type': 'application/json' })
        response.end(JSON.stringify(out))
      })().catch(() => request.socket.destroy())
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    refusals: () => refusals,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

/**
 * A node behind a load balancer lags the others now and then: the listener learns a head from one
 * backend and asks another for that head's logs. The scan is read again at the next head, quietly:
 * every request is fulfilled once, and the runner's log holds no warning or error about it.
 */
describe('an RPC_URL whose backends lag each other', () => {
  let stack: DevStack
  let balancer: Awaited<ReturnType<typeof startLaggingBalancer>>
  let runner: PartProcess
  let cases: DemoCase[]

  beforeAll(async () => {
    stack = await startDevStack({
      env: { ...process.env, REDIS_URL: testRedisUrl(), LOG_LEVEL: 'warn', EA_PORT: '' },
      prefix: uniquePrefix('rel-lagging-node'),
      nodeKeys: [ANVIL_PRIVATE_KEYS[1]!],
      runner: false,
    })
    balancer = await startLaggingBalancer(stack.rpcUrl)
    const registry = await loadJobRegistry(stack.settings.JOBS_DIR, 31337)
    cases = (await buildDemoCases(stack, registry.jobs)).filter((demoCase) =>
      demoCase.job.name.includes('game-odds'),
    )
    if (cases.length === 0) throw new Error('no game-odds job in JOBS_DIR')
    runner = await startPart('runner', { ...stack.env, RPC_URL: balancer.url, LOG_LEVEL: 'info' })
  }, 180_000)

  afterAll(async () => {
    await stopPart(runner)
    await balancer?.close()
    await stack?.stop()
  }, 60_000)

  it(`fulfils ${REQUESTS} requests once each, and says nothing of the refused log reads`, async () => {
    const { provider, consumer } = stack.contracts
    const fromBlock = (await provider.getBlockNumber()) + 1
    const sent = await sendPaced(stack, requestsOfCases(cases, REQUESTS), 2)
    const fulfilled = await waitForFulfilments(
      consumer,
      provider,
      sent.map((request) => request.requestId),
      { fromBlock, timeoutMs: 180_000 },
    )
    if (fulfilled.size < REQUESTS) console.log(runner.output().slice(-4000))
    expect(fulfilled.size).toBe(REQUESTS)
    expect(await wrongValues(cases, sent, fulfilled)).toEqual([])
    expect(await oracleResponsesSince(stack, fromBlock)).toBe(REQUESTS)
    // The fault happened: the lagging backend refused some of the listener's reads.
    expect(balancer.refusals()).toBeGreaterThan(0)
    const loud = runner
      .output()
      .split('\n')
      .filter((line) => /"level":(40|50|60)/.test(line) && !line.includes('raw keys'))
    expect(loud).toEqual([])
  }, 300_000)
})
