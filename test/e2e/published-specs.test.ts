import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Interface, Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ORACLE_RESPONSE_TOPIC } from '../../src/chain/operator.ts'
import { createLogger } from '../../src/config/logger.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { buildDemoCases } from '../../src/dev/demo.ts'
import { waitFor } from '../../src/dev/process.ts'
import { sendConsumerRequests, waitForFulfilments } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { decodeCallbackAnswer, toPlain, type SpecOf } from '../../src/pipeline/index.ts'
import { feedJobShape } from '../../src/runner/feed-job.ts'
import type { LoadedJob } from '../../src/runner/job-registry.ts'
import { startTestServer, type TestServer } from '../pipeline/support/http-server.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { runFeedrunner } from './support/cli.ts'
import {
  filledSpec,
  publishedApi,
  publishedSpecs,
  type PublishedSpec,
} from './support/published.ts'

// Every published directrequest spec of Chainlink's docs and samples (test/e2e/specs), with the
// addresses an operator fills in: `jobs validate` accepts them, `jobs run` dry-runs each to the value
// its consumer must store, and on the dev chain a ChainlinkClient consumer (FeedConsumer) gets that
// value, read back from the chain; the forwarder samples' fulfilments go through the stack's
// AuthorizedForwarder. The bounds only catch hangs: two loaded cores run each command in seconds.

const NODE_ADDRESS = new Wallet(ANVIL_PRIVATE_KEYS[1]).address
const fulfilments = new Interface([
  'function fulfillOracleRequest2(bytes32 requestId, uint256 payment, address callbackAddress, bytes4 callbackFunctionId, uint256 expiration, bytes data)',
  'function fulfillOracleRequest(bytes32 requestId, uint256 payment, address callbackAddress, bytes4 callbackFunctionId, uint256 expiration, bytes32 data)',
])
const forwarderCalls = new Interface(['function forward(address to, bytes data)'])
const CORE_SPECS = [
  'core-direct-request-spec.toml',
  'core-direct-request-spec-cbor.toml',
  'core-multiword-response-spec.toml',
]

describe("Chainlink's published specs on the dev chain", { timeout: 300_000 }, () => {
  const jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-published-specs-'))
  let api: TestServer
  let stack: DevStack
  let specs: PublishedSpec[]
  let cliEnv: NodeJS.ProcessEnv

  beforeAll(async () => {
    api = await startTestServer(publishedApi)
    specs = publishedSpecs(api.url)
    for (const spec of specs)
      writeFileSync(
        join(jobsDir, spec.file),
        filledSpec(spec.file, { api: api.url, nodeAddress: NODE_ADDRESS }),
      )
    const bridges = { BRIDGE_ETHERSCAN_URL: `${api.url}/etherscan` }
    const env = {
      ...process.env,
      ...bridges,
      REDIS_URL: testRedisUrl(),
      JOBS_DIR: jobsDir,
      LOG_LEVEL: 'warn',
      EA_PORT: '',
    }
    stack = await startDevStack({
      env,
      prefix: uniquePrefix('published-specs'),
      logger: createLogger(parseSettings(env), 'published-specs-test'),
    })
    cliEnv = {
      ...bridges,
      REDIS_URL: stack.redisUrl,
      QUEUE_PREFIX: stack.env.QUEUE_PREFIX,
      RPC_URL: stack.rpcUrl,
      JOBS_DIR: jobsDir,
      FORWARDER_ADDRESS: stack.contracts.addresses.forwarder,
    }
  })

  afterAll(async () => {
    await stack?.stop()
    await api?.close()
  })

  function loaded(file: string): LoadedJob {
    const job = stack.runner!.registry.jobs.find((candidate) => candidate.job.file.endsWith(file))
    expect(job, `the runner serves ${file}`).toBeDefined()
    return job!
  }

  const fulfilled = () => specs.filter((spec) => spec.expected !== undefined)

  it('`jobs validate` accepts every one; core test data is refused by name', async () => {
    const files = specs.map((spec) => join(jobsDir, spec.file))
    const result = await runFeedrunner(['jobs', 'validate', ...files], cliEnv)
    expect(result.stderr).toBe('')
    expect(result.stdout).toContain(`${files.length} of ${files.length} specs valid`)
    const core = CORE_SPECS.map((file) => join(import.meta.dirname, 'specs', file))
    const refused = await runFeedrunner(['jobs', 'validate', ...core], cliEnv)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain('task ds1_merge: merge needs the attribute right')
    expect(refused.stderr).toContain('task ds1_multiply: unknown attribute value for multiply')
    expect(refused.stderr).toContain('task usd_multiply: unknown attribute value for multiply')
  })

  it('`jobs run` dry-runs each to the value its consumer must store', async () => {
    const pending = [...fulfilled()]
    const runOne = async (spec: PublishedSpec): Promise<void> => {
      const args = ['jobs', 'run', join(jobsDir, spec.file), '--json']
      for (const [key, value] of spec.params) args.push('--param', `${key}=${value}`)
      const result = await runFeedrunner(args, cliEnv)
      expect(result.code, `${spec.file}: ${result.stderr}`).toBe(0)
      const output = JSON.parse(result.stdout.slice(result.stdout.indexOf('{'))) as {
        value: unknown
        to: string
      }
      expect(output.value, spec.file).toEqual(toPlain(spec.expected))
      if (spec.forwarded) expect(output.to).toBe(stack.contracts.addresses.forwarder)
    }
    // Three at a time: each is a process of its own on two shared cores.
    await Promise.all(
      [0, 1, 2].map(async () => {
        for (let spec = pending.shift(); spec; spec = pending.shift()) await runOne(spec)
      }),
    )
  })

  it('a ChainlinkClient consumer gets each value on chain; forwarded ones go through the AuthorizedForwarder', async () => {
    const { consumer, deployer, provider, addresses } = stack.contracts
    const cases = fulfilled().map((spec) => ({ spec, job: loaded(spec.file) }))
    const shapes = cases.map(({ job }) => feedJobShape(job.job))
    const fromBlock = await provider.getBlockNumber()
    const sent = await sendConsumerRequests(
      consumer,
      deployer,
      cases.map(({ spec, job }, index) => ({
        externalJobId: job.externalJobId,
        valueType: shapes[index]!.answerType,
        version: shapes[index]!.answer.method === 'fulfillOracleRequest' ? 1 : 2,
        params: spec.params,
        // None of these specs sets a minimum: the chain's, 10^13 juels, applies.
        payment: (job.job.spec as SpecOf<'directrequest'>).minContractPaymentLinkJuels!,
      })),
    )
    const answers = await waitForFulfilments(
      consumer,
      provider,
      sent.map((request) => request.requestId),
      { fromBlock, timeoutMs: 120_000 },
    )
    for (const [index, { spec }] of cases.entries()) {
      const stored = answers.get(sent[index]!.requestId)
      expect(stored, `${spec.file} fulfilled`).toBeDefined()
      const shape = shapes[index]!
      const value =
        shape.answerType === 'raw'
          ? decodeCallbackAnswer(shape.answer, String(stored!.value))
          : stored!.value
      expect(toPlain(value), spec.file).toEqual(toPlain(spec.expected))
      // Who sent the fulfilment, read from the chain: the node key, to the forwarder or the Operator.
      const responses = await provider.getLogs({
        address: addresses.operator,
        topics: [ORACLE_RESPONSE_TOPIC, sent[index]!.requestId],
        fromBlock,
      })
      expect(responses, `${spec.file}: one OracleResponse`).toHaveLength(1)
      const tx = await provider.getTransaction(responses[0]!.transactionHash)
      expect(tx!.from).toBe(NODE_ADDRESS)
      expect(tx!.to, spec.file).toBe(spec.forwarded ? addresses.forwarder : addresses.operator)
      const call = spec.forwarded ? forwarderCalls.parseTransaction(tx!)!.args[1] : tx!.data
      expect(fulfilments.parseTransaction({ data: String(call) })?.name).toMatch(
        /^fulfillOracleRequest2?$/,
      )
    }
  })

  it('a spec whose fetch takes its URL from the request refuses a loopback source, as a node does', async () => {
    const spec = specs.find((candidate) => candidate.refusedAtRun)!
    const job = loaded(spec.file)
    const [sent] = await sendConsumerRequests(stack.contracts.consumer, stack.contracts.deployer, [
      {
        externalJobId: job.externalJobId,
        valueType: 'uint256',
        version: 1,
        params: spec.params,
        payment: (job.job.spec as SpecOf<'directrequest'>).minContractPaymentLinkJuels!,
      },
    ])
    await waitFor(
      'the run to error',
      async () => (await stack.runner!.runs.get(sent!.requestId))?.state === 'errored',
      60_000,
    )
    expect((await stack.runner!.runs.get(sent!.requestId))?.reason).toMatch(spec.refusedAtRun!)
  })

  it('`request` drives a multi-word and a bytes32 spec by name', async () => {
    for (const [file, shown] of [
      ['docs-multi-word.toml', '[5123,301241000,280199999]'],
      [
        'sample-get-bytes32.toml',
        specs.find((spec) => spec.file === 'sample-get-bytes32.toml')!.expected,
      ],
    ] as const) {
      const spec = specs.find((candidate) => candidate.file === file)!
      const args = ['request', file.replace(/\.toml$/, ''), '--timeout', '90']
      for (const [key, value] of spec.params) args.push('--param', `${key}=${value}`)
      const result = await runFeedrunner(args, cliEnv)
      expect(result.code, `${file}: ${result.stdout}${result.stderr}`).toBe(0)
      expect(result.stdout).toContain(String(shown))
      expect(result.stdout).toContain('1 of 1 fulfilled')
    }
    const refused = await runFeedrunner(['request', 'docs-spec-format', '--timeout', '5'], cliEnv)
    expect(refused.code).toBe(1)
    expect(refused.stderr.trim().split('\n')).toEqual([
      `${join(jobsDir, 'docs-spec-format.toml')}: request and demo cannot drive it: it has no ethtx task: it fulfils nothing on chain`,
    ])
  })

  it('demo names, in one line each, the specs it cannot build requests for', async () => {
    const skipped: string[] = []
    const cases = await buildDemoCases(stack, stack.runner!.registry.jobs, (line) =>
      skipped.push(line),
    )
    expect(cases).toEqual([])
    expect(skipped).toHaveLength(specs.length)
    for (const line of skipped) expect(line.split('\n')).toHaveLength(1)
    expect(skipped).toContainEqual(
      expect.stringMatching(
        /docs-multi-word\.toml: the demo skips it: its bridge names no feed endpoint/,
      ),
    )
  })
})

describe('feedrunner dev with a spec it cannot drive', () => {
  it('names it in one line and starts', async () => {
    const jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-dev-undrivable-'))
    writeFileSync(
      join(jobsDir, 'docs-spec-format.toml'),
      filledSpec('docs-spec-format.toml', { api: 'http://127.0.0.1:9', nodeAddress: NODE_ADDRESS }),
    )
    writeFileSync(
      join(jobsDir, 'sample-get-bytes32.toml'),
      filledSpec('sample-get-bytes32.toml', { api: '', nodeAddress: NODE_ADDRESS }),
    )
    const child = spawn(
      process.execPath,
      [join(import.meta.dirname, '../../bin/feedrunner.js'), 'dev'],
      {
        env: {
          ...process.env,
          REDIS_URL: testRedisUrl(),
          QUEUE_PREFIX: uniquePrefix('dev-undrivable'),
          LOG_LEVEL: 'warn',
          JOBS_DIR: jobsDir,
          DEV_STATE_FILE: join(jobsDir, 'dev-state.json'),
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let output = ''
    try {
      await new Promise<void>((resolveReady, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ready line:\n${output}`)), 120_000)
        const read = (chunk: Buffer) => {
          output += chunk.toString()
          if (output.includes('feedrunner dev ready')) {
            clearTimeout(timer)
            resolveReady()
          }
        }
        child.stdout.on('data', read)
        child.stderr.on('data', read)
        child.once('exit', (code) =>
          reject(new Error(`feedrunner dev exited with ${code}:\n${output}`)),
        )
      })
      // Not a terminal, so the dev stack logs JSON lines (LOG_FORMAT's default for a pipe): one says it.
      const said = output
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => (JSON.parse(line) as { msg?: string }).msg)
      expect(said).toContain(
        `${join(jobsDir, 'docs-spec-format.toml')}: request and demo cannot drive it: it has no ethtx task: it fulfils nothing on chain`,
      )
      // The Bytes32 sample's answer (one word through fulfillOracleRequest) is in the job table.
      expect(output).toMatch(/Get > Bytes32\s.*bytes32\s.*get, path/)
      expect(output).not.toMatch(/\n\s+at /)
    } finally {
      if (child.exitCode === null) {
        const exited = new Promise((resolveExit) => child.once('exit', resolveExit))
        child.kill('SIGTERM')
        await exited
      }
    }
  }, 180_000)
})
