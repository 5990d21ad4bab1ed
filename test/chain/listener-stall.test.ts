import type { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createRequestListener } from '../../src/chain/listener/index.ts'
import { STALL_REPORT_AFTER_MS } from '../../src/chain/listener/stall-report.ts'
import type { OracleRequestEvent } from '../../src/chain/operator.ts'
import { waitFor } from '../../src/dev/process.ts'
import { createRedisConnection } from '../../src/queue/connection.ts'
import { startJsonRpcTap, type JsonRpcTap } from '../support/json-rpc-tap.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { makeRequests, rpc, startTestChain, TEST_SPEC_ID, type TestChain } from './support.ts'

/** Bounds that only catch a hang: the stall is said after STALL_REPORT_AFTER_MS of real time. */
const HANG_MS = STALL_REPORT_AFTER_MS + 60_000

interface Line {
  level: 'warn' | 'info'
  fields: Record<string, unknown>
  message: string
}

/**
 * One RPC_URL whose balancer keeps sending the log reads to a backend that stays behind (the tap's
 * lagging node, every read): the listener cannot read the block that holds a request. It says so once
 * the stall has lasted STALL_REPORT_AFTER_MS, again each reporting interval, and once more when the
 * backend catches up and the request is delivered. Short lags stay quiet (lagging-node.test.ts).
 */
describe('a listener whose node keeps not having the blocks it told a head past', () => {
  let chain: TestChain
  let redis: Redis
  let tap: JsonRpcTap

  beforeAll(async () => {
    chain = await startTestChain()
    redis = createRedisConnection(testRedisUrl(), 'worker')
    tap = await startJsonRpcTap(chain.anvil)
  })
  afterAll(async () => {
    await tap?.stop()
    await redis?.quit()
    await chain?.stop()
  })

  it(
    'says the stall once it lasts, once a reporting interval while it does, and when the request is delivered',
    async () => {
      const lines: Line[] = []
      const requests: OracleRequestEvent[] = []
      const head = Number(await rpc<string>(chain.dev.provider, 'eth_blockNumber'))
      const listener = createRequestListener({
        rpcUrl: tap.httpUrl,
        chainId: chain.dev.chainId,
        operators: [chain.dev.addresses.operator],
        specIds: new Map([[TEST_SPEC_ID, { minConfirmations: 1 }]]),
        redis,
        prefix: uniquePrefix('listener-stall'),
        pollIntervalMs: 200,
        fromBlock: head + 1,
        onRequest: (event) => void requests.push(event),
        log: {
          warn: (fields, message) => void lines.push({ level: 'warn', fields, message }),
          info: (fields, message) => void lines.push({ level: 'info', fields, message }),
        },
        label: 'chain 31337 (dev)',
        reportEveryMs: 3_000,
      })
      await listener.start()
      try {
        // The automining chain makes no block after the request's: the backend stays one behind.
        tap.laggingLogs = { blocks: 1, answer: 'refuse', every: true }
        const [request] = await makeRequests(chain, 1)
        const stalledLines = () => lines.filter((line) => line.fields['state'] === 'stalled')
        await waitFor('a second stall line', async () => stalledLines().length >= 2, HANG_MS)
        const [first, still] = stalledLines()
        expect(first!.level).toBe('warn')
        expect(first!.message).toMatch(
          /^chain 31337 \(dev\): the listener has not been able to read blocks \d+-\d+ for \d+ s: the node told a head past them, then answered "unknown block"/,
        )
        expect(Number(first!.fields['toBlock'])).toBe(request!.blockNumber)
        expect(still!.message).toMatch(
          /still cannot read blocks \d+-\d+ after .*reads refused since the last line/,
        )
        expect(requests).toEqual([])

        tap.laggingLogs = undefined
        await waitFor(
          `request ${request!.requestId} delivered`,
          async () => requests.some((event) => event.requestId === request!.requestId),
          HANG_MS,
        )
        await waitFor(
          'the line that says the blocks are read',
          async () => lines.some((line) => line.fields['state'] === 'reading'),
          HANG_MS,
        )
        const back = lines.find((line) => line.fields['state'] === 'reading')!
        expect(back.level).toBe('info')
        expect(back.message).toMatch(
          /^chain 31337 \(dev\): the listener reads its blocks again after/,
        )
        expect(Number(back.fields['refused'])).toBeGreaterThan(1)
        expect(tap.laggedReads).toBeGreaterThan(1)
      } finally {
        tap.laggingLogs = undefined
        await listener.stop()
      }
    },
    HANG_MS * 3,
  )
})
