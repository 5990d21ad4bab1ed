import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FeedrunnerError } from '../../src/config/errors.ts'
import { postJsonRpcBatch, type RpcCall } from '../../src/chain/sender/json-rpc-batch.ts'
import { TaskError } from '../../src/pipeline/index.ts'
import { runTask } from '../pipeline/support/task.ts'
import { recordFigures } from './support.ts'

/**
 * What a node or a source may answer, fuzzed (issue 21 item 6, issue 23): JSON-RPC answers read by the
 * sender's batch client, and JSON bodies read by jsonparse. Every input ends in a value or in an error
 * of ours with a reason, never a crash or a bare parser error. Together with test/reliability/
 * hostile-input-adapter.test.ts (adapter bodies), hostile-input-pipeline.test.ts (spec files, CBOR
 * request data), test/pipeline/loader-fuzz and test/pipeline/tasks/cbor-fuzz the suite runs 10,000
 * hostile inputs (docs/security.md counts them).
 */
const RPC_RUNS = Number(process.env.RELIABILITY_FUZZ_RUNS ?? 1_000) * 2
const JSON_RUNS = Number(process.env.RELIABILITY_FUZZ_RUNS ?? 1_000) * 2

let server: Server
let url = ''
let answer: Buffer = Buffer.alloc(0)
beforeAll(async () => {
  server = createServer((request, response) => {
    request.resume()
    request.on('end', () => {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(answer)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

const CALLS: RpcCall[] = [
  ['eth_blockNumber', []],
  ['eth_getTransactionReceipt', ['0x01']],
]
const figures: Record<string, unknown> = {}
afterAll(() => recordFigures('fuzz-sources', figures))

/** Text a hostile or broken JSON source may send: JSON, mutated JSON, deep nesting, long numbers, bytes. */
function hostileJsonText(valid: fc.Arbitrary<unknown>): fc.Arbitrary<Buffer> {
  const text = fc.oneof(
    valid.map((value) => JSON.stringify(value)),
    fc.tuple(valid, fc.nat(40), fc.string({ maxLength: 6 })).map(([value, at, insert]) => {
      const json = JSON.stringify(value) ?? ''
      return json.slice(0, at) + insert + json.slice(at + insert.length)
    }),
    fc.jsonValue({ maxDepth: 5 }).map((value) => JSON.stringify(value)),
    fc.nat({ max: 5_000 }).map((depth) => `${'['.repeat(depth)}${']'.repeat(depth)}`),
    fc.nat({ max: 5_000 }).map((digits) => `{"result":${'9'.repeat(digits + 1)}}`),
    fc.string({ maxLength: 200 }),
  )
  return fc.oneof(
    text.map((value) => Buffer.from(value)),
    fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
  )
}

describe('fuzzed answers from sources and nodes', () => {
  it(`JSON-RPC: ${RPC_RUNS} hostile answers end in outcomes or an upstream error with a reason`, async () => {
    const entry = fc.record({
      jsonrpc: fc.constant('2.0'),
      id: fc.oneof(fc.constantFrom(0, 1, 2), fc.integer(), fc.string({ maxLength: 3 })),
      result: fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.constant(undefined)),
      error: fc.oneof(
        fc.constant(undefined),
        fc.record({ code: fc.integer(), message: fc.oneof(fc.string(), fc.integer()) }),
      ),
    })
    const batch = fc.array(entry, { maxLength: 4 })
    let answered = 0
    let refused = 0
    await fc.assert(
      fc.asyncProperty(hostileJsonText(batch), async (bytes) => {
        answer = bytes
        try {
          const outcomes = await postJsonRpcBatch(url, CALLS, 10_000)
          expect(outcomes).toHaveLength(CALLS.length)
          for (const outcome of outcomes)
            if (!outcome.ok) expect(typeof outcome.message).toBe('string')
          answered++
        } catch (error) {
          refused++
          expect(error, String(error)).toBeInstanceOf(FeedrunnerError)
          expect((error as FeedrunnerError).kind).toBe('upstream')
          expect((error as Error).message).toMatch(/^eth_blockNumber: the node answered /)
        }
      }),
      { numRuns: RPC_RUNS },
    )
    figures.jsonRpcAnswers = { runs: RPC_RUNS, answered, refused }
  }, 180_000)

  it('JSON-RPC: an answer over RPC_MAX_RESPONSE_BYTES is cut off with the setting named', async () => {
    answer = Buffer.from(`[{"jsonrpc":"2.0","id":0,"result":"${'a'.repeat(200_000)}"}]`)
    await expect(postJsonRpcBatch(url, CALLS, 10_000, 64 * 1024)).rejects.toThrow(
      'eth_blockNumber: the node answered more than 65536 bytes (RPC_MAX_RESPONSE_BYTES)',
    )
  })

  it(`jsonparse: ${JSON_RUNS} hostile source bodies end in a value or a TaskError with a reason`, async () => {
    const document = fc.record({
      data: fc.record({ result: fc.jsonValue({ maxDepth: 3 }) }),
      statusCode: fc.integer(),
    })
    let values = 0
    let errors = 0
    await fc.assert(
      fc.asyncProperty(
        hostileJsonText(document),
        fc.constantFrom('data,result', '$.data.result', 'statusCode', 'a,0,b', '$..x', '0'),
        async (bytes, path) => {
          try {
            await runTask('jsonparse', { path }, { inputs: [bytes.toString('utf8')] })
            values++
          } catch (error) {
            errors++
            expect(error, String(error)).toBeInstanceOf(TaskError)
            expect((error as Error).message.length).toBeGreaterThan(5)
          }
        },
      ),
      { numRuns: JSON_RUNS },
    )
    figures.jsonBodies = { runs: JSON_RUNS, values, errors }
  }, 180_000)
})
