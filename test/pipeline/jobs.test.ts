import { spawn } from 'node:child_process'
import { readdir, readFile } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { catalogEntries } from '../../src/feeds/catalog/index.ts'
import {
  dryRunJob,
  FEED_CONSUMER_CALLBACKS,
  jobTableMarkdown,
  parseJobSpecFile,
  summariseJob,
  type Job,
  type JobSummary,
} from '../../src/pipeline/index.ts'
import { sendJson, startTestServer, type TestServer } from './support/http-server.ts'
import { inMutationRun } from '../support/mutation.ts'

// The specs in jobs/ against the catalog (the single source of truth), FeedConsumer's callbacks,
// the table of docs/job-specs.md, the CLI, and a dry run of each against a bridge that answers like the adapter.
const OPERATOR = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'
const files = (await readdir('jobs'))
  .filter((name) => name.endsWith('.toml'))
  .sort()
  .map((name) => `jobs/${name}`)
const jobs: Job[] = await Promise.all(files.map((file) => parseJobSpecFile(file)))
const summaries: JobSummary[] = jobs.map(summariseJob)

/** Every endpoint, and every variant of an endpoint that has them: what a spec must exist for. */
const targets = catalogEntries.flatMap((entry) =>
  entry.variants
    ? entry.variants.map((variant) => ({
        endpoint: entry.name,
        params: [...variant.params],
        example: variant.example,
      }))
    : [{ endpoint: entry.name, params: Object.keys(entry.params), example: entry.example }],
)

function run(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['bin/feedrunner.js', ...args], {
      env: { ...process.env, ...env },
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

describe('jobs/ specs', () => {
  it('cover every catalog endpoint and weather variant, once, with the catalog parameters', () => {
    expect(jobs.length).toBe(targets.length)
    for (const target of targets) {
      const matching = summaries.filter(
        (summary) =>
          summary.literals.endpoint === target.endpoint &&
          sameSet(
            Object.keys(summary.requestParams).filter(
              (name) => name !== 'path' && name !== 'times',
            ),
            target.params,
          ),
      )
      expect(
        matching.map((summary) => summary.file),
        `${target.endpoint} ${target.params.join(',')}`,
      ).toHaveLength(1)
    }
  })

  it('use the datafeed bridge, the ##signKey placeholder, path (and times for numbers), and the dev Operator', () => {
    for (const [index, summary] of summaries.entries()) {
      expect(summary.bridge).toBe('datafeed')
      expect(summary.literals.key).toBe('##signKey')
      expect(summary.requestParams.path).toBe('path')
      const numeric = summary.valueType === 'uint256' || summary.valueType === 'int256'
      expect(summary.requestParams.times, summary.file).toBe(numeric ? 'times' : undefined)
      const spec = jobs[index]!.spec
      expect(spec.type === 'directrequest' && spec.contractAddress).toBe(OPERATOR)
      expect(spec.evmChainID).toBe(31337n)
      expect(jobs[index]!.tasks.find((task) => task.type === 'ethtx')!.attributes.to).toBe(OPERATOR)
    }
    expect(new Set(summaries.map((summary) => summary.externalJobID)).size).toBe(summaries.length)
  })

  it('deliver a value type FeedConsumer has a callback for (contracts/FeedConsumer.sol)', async () => {
    const source = await readFile('contracts/FeedConsumer.sol', 'utf8')
    const callbacks = [
      ...source.matchAll(
        /function (fulfill\w+)\(bytes32 requestId, (\w+)(?: calldata| memory)? value\)/g,
      ),
    ].map((match) => `${match[1]}(bytes32,${match[2]})`)
    for (const summary of summaries)
      expect(callbacks).toContain(
        FEED_CONSUMER_CALLBACKS[summary.valueType as keyof typeof FEED_CONSUMER_CALLBACKS],
      )
  })

  it('are listed in the table of docs/job-specs.md, generated from jobs/', async () => {
    const readme = await readFile('docs/job-specs.md', 'utf8')
    const section = /<!-- jobs:start -->([\s\S]*)<!-- jobs:end -->/.exec(readme)?.[1] ?? ''
    expect(section).toContain(jobTableMarkdown(summaries))
  })
})

describe('jobs/ specs, dry run against a bridge that answers like the adapter', () => {
  let bridge: TestServer
  // The adapter's answer: result at path, scaled by times, as a decimal string (numbers), text or boolean.
  const answers: Record<string, unknown> = {
    uint256: '144',
    int256: '-25.5',
    bool: true,
    string: 'BoredApeYachtClub',
  }
  const expected: Record<string, unknown> = {
    uint256: 144n,
    int256: -25n,
    bool: true,
    string: 'BoredApeYachtClub',
  }
  beforeAll(async () => {
    bridge = await startTestServer((request, response) => {
      const body = JSON.parse(request.body) as {
        data: { endpoint: string; type?: string }
        meta?: unknown
      }
      const summary = summaries.find((item) => item.literals.endpoint === body.data.endpoint)
      const job = summaries.find(
        (item) =>
          item.literals.endpoint === body.data.endpoint &&
          Object.keys(item.requestParams).every((name) => name in body.data),
      )
      const value = answers[(job ?? summary)?.valueType ?? '']
      sendJson(response, 200, {
        jobRunID: '1',
        result: value,
        data: { result: value },
        statusCode: 200,
      })
    })
  })
  afterAll(() => bridge.close())

  it.each(files.map((file, index) => [file, index] as const))('%s', async (_file, index) => {
    const job = jobs[index]!
    const summary = summaries[index]!
    const target = targets.find(
      (item) =>
        item.endpoint === summary.literals.endpoint &&
        sameSet(
          item.params,
          Object.keys(summary.requestParams).filter((name) => name !== 'path' && name !== 'times'),
        ),
    )!
    const params: [string, string][] = [
      ...Object.entries(target.example),
      ['path', 'data.x'],
      ...(summary.requestParams.times ? [['times', '10'] as [string, string]] : []),
    ]
    const before = bridge.requests.length
    const dryRun = await dryRunJob(job, { params, env: { BRIDGE_DATAFEED_URL: bridge.url } })
    expect(dryRun.result.errors).toEqual([])
    expect(dryRun.value).toEqual(expected[summary.valueType ?? ''])
    // What reached the bridge: the endpoint, the placeholder key, the request's parameters as given.
    const sent = JSON.parse(bridge.requests[before]!.body) as {
      id: string
      data: Record<string, string>
      meta: { oracleRequest: { requestId: string } }
    }
    expect(sent.id).toBe(job.spec.externalJobID)
    expect(sent.data).toEqual({
      endpoint: summary.literals.endpoint,
      key: '##signKey',
      ...Object.fromEntries(params),
    })
    expect(sent.meta.oracleRequest.requestId).toBe(dryRun.request.requestId)
    expect(dryRun.transaction!.to).toBe(OPERATOR)
    expect(dryRun.transaction!.gasLimit).toBe(500000n)
  })

  it('a missing request parameter fails the bridge task with the reason', async () => {
    const dryRun = await dryRunJob(jobs[files.indexOf('jobs/game-odds.toml')]!, {
      params: [['region', 'england']],
      env: { BRIDGE_DATAFEED_URL: bridge.url },
    })
    expect(dryRun.result.ok).toBe(false)
    expect(dryRun.result.tasks.find((task) => task.id === 'fetch')!.error).toBe(
      'requestData: $(decode_cbor.sport): no "sport" here',
    )
    expect(dryRun.transaction).toBeUndefined()
  })
})

// Spawned: no mutant can reach the child (test/support/mutation.ts).
describe.skipIf(inMutationRun)('feedrunner jobs (the CLI, spawned)', () => {
  let bridge: TestServer
  let good: Awaited<ReturnType<typeof run>>
  let broken: Awaited<ReturnType<typeof run>>
  let dry: Awaited<ReturnType<typeof run>>
  beforeAll(async () => {
    bridge = await startTestServer((_request, response) =>
      sendJson(response, 200, { result: '144', data: { result: '144' }, statusCode: 200 }),
    )
    // Each spawn pays tsx's start-up; run the three at once.
    const gameOdds = Object.entries(
      catalogEntries.find((entry) => entry.name === 'game-odds')!.example,
    ).flatMap(([key, value]) => ['--param', `${key}=${value}`])
    ;[good, broken, dry] = await Promise.all([
      run(['jobs', 'validate', ...files]),
      run([
        'jobs',
        'validate',
        'test/pipeline/specs/broken/cycle.toml',
        'test/pipeline/specs/broken/unknown-type.toml',
        files[0]!,
      ]),
      run(
        [
          'jobs',
          'run',
          'jobs/game-odds.toml',
          ...gameOdds,
          '--param',
          'path=data.homeMoneyLine',
          '--param',
          'times=100',
          '--bridge',
          `datafeed=${bridge.url}`,
        ],
        { BRIDGE_DATAFEED_URL: 'http://127.0.0.1:9/not-this-one' },
      ),
    ])
  }, 120_000)
  afterAll(() => bridge.close())

  it('`jobs validate jobs/*.toml` passes', () => {
    expect(good.stderr).toBe('')
    expect(good.stdout).toContain(`${files.length} of ${files.length} specs valid`)
    expect(good.code).toBe(0)
  })

  it('`jobs validate` exits non-zero and prints every problem of broken specs', () => {
    expect(broken.code).toBe(1)
    expect(broken.stderr).toContain(
      'test/pipeline/specs/broken/cycle.toml:9 (observationSource line 2): task b: tasks form a cycle',
    )
    expect(broken.stderr).toContain(
      'test/pipeline/specs/broken/unknown-type.toml:10 (observationSource line 3): task weird: unknown task type',
    )
    expect(broken.stdout).toContain('1 of 3 specs valid')
  })

  it('`jobs run` prints each task in order, then the calldata and the value', () => {
    expect(dry.stderr).toBe('')
    expect(dry.code).toBe(0)
    const lines = dry.stdout.split('\n')
    expect(
      lines.filter((line) => line.startsWith('ok ')).map((line) => line.split(/\s+/)[1]),
    ).toEqual([
      'decode_log',
      'decode_cbor',
      'fetch',
      'parse',
      'encode_data',
      'encode_tx',
      'submit_tx',
    ])
    expect(dry.stdout).toMatch(
      /calldata to 0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512 \(gas limit 500000\):\n0x[0-9a-f]+\n/,
    )
    expect(dry.stdout).toContain('value: 144 (uint256)')
  })
})

function sameSet(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((item) => b.includes(item))
}
