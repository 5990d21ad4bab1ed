import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  answerLabel,
  answerShapeOf,
  dryRunJob,
  loadJobSpec,
  toPlain,
} from '../../src/pipeline/index.ts'
import { drivableShape } from '../../src/runner/feed-job.ts'
import { filledSpec, publishedApi, publishedSpecs } from '../e2e/support/published.ts'
import { startTestServer, type TestServer } from './support/http-server.ts'

// Every published directrequest spec (test/e2e/specs) with its addresses filled in: it validates,
// its answer's shape is read from its own ethabiencode steps, and a dry run off chain gives the value
// its consumer must store. test/e2e/published-specs.test.ts runs them on the dev chain.

const NODE = '0x70997970C51812dc3A010C7d01b50e0d17dc79C8'
const FORWARDER = '0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9'
const SHAPES: Record<string, string> = {
  'chainlink-get-uint256.toml': 'fulfillOracleRequest2 uint256',
  'docs-get-uint256.toml': 'fulfillOracleRequest2 uint256',
  'forwarder-get-uint256.toml': 'fulfillOracleRequest2 uint256',
  'docs-get-int256.toml': 'fulfillOracleRequest2 int256',
  'docs-get-bool.toml': 'fulfillOracleRequest2 bool',
  'sample-get-string.toml': 'fulfillOracleRequest2 string',
  'forwarder-get-string.toml': 'fulfillOracleRequest2 string',
  'docs-get-bytes.toml': 'fulfillOracleRequest2 bytes',
  'sample-get-bytes32.toml': 'fulfillOracleRequest bytes32',
  'docs-multi-word.toml': 'fulfillOracleRequest2 (uint256, uint256, uint256)',
  'docs-existing-job.toml': 'fulfillOracleRequest2 (uint256, uint256, uint256)',
  'migration-simple-fetch.toml': 'fulfillOracleRequest uint256',
  'migration-runlog-cbor.toml': 'fulfillOracleRequest uint256',
}

let api: TestServer
beforeAll(async () => {
  api = await startTestServer(publishedApi)
})
afterAll(() => api.close())

describe("Chainlink's published specs, off chain", () => {
  it.each(publishedSpecs('http://api.invalid').map((spec) => [spec.file]))(
    '%s: validates, and its answer shape is read from the spec',
    (file) => {
      const { job, problems } = loadJobSpec(
        filledSpec(file, { api: api.url, nodeAddress: NODE }),
        file,
      )
      expect(problems).toEqual([])
      const answer = answerShapeOf(job!)
      if (file === 'docs-spec-format.toml') {
        expect(answer).toEqual({
          ok: false,
          reason: 'it has no ethtx task: it fulfils nothing on chain',
        })
        expect(drivableShape(job!)).toEqual({
          ok: false,
          reason: `${file}: request and demo cannot drive it: it has no ethtx task: it fulfils nothing on chain`,
        })
        return
      }
      expect(answer.ok && `${answer.shape.method} ${answerLabel(answer.shape)}`).toBe(SHAPES[file])
    },
  )

  it.each(publishedSpecs('').map((spec) => [spec.file]))(
    '%s: a dry run gives the value its consumer stores',
    async (file) => {
      const spec = publishedSpecs(api.url).find((candidate) => candidate.file === file)!
      const { job } = loadJobSpec(filledSpec(file, { api: api.url, nodeAddress: NODE }), file)
      const dryRun = await dryRunJob(job!, {
        params: spec.params,
        env: { BRIDGE_ETHERSCAN_URL: `${api.url}/etherscan` },
        forwarder: FORWARDER,
      })
      if (spec.refusedAtRun) {
        expect(dryRun.result.errors.join('\n')).toMatch(spec.refusedAtRun)
        return
      }
      expect(dryRun.result.errors).toEqual([])
      if (spec.expected === undefined) {
        // The spec format example computes 100 x the answer and sends nothing.
        expect(String(dryRun.result.outputs[0])).toBe('301241')
        expect(dryRun.transaction).toBeUndefined()
        return
      }
      expect(toPlain(dryRun.value)).toEqual(toPlain(spec.expected))
      expect(dryRun.transaction!.to).toBe(
        spec.forwarded ? FORWARDER : '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
      )
    },
  )
})
