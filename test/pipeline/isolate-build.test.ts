// The isolate an install runs: the build bundles its thread with the parts of ethers it uses
// (bin/bundle-isolate.js), so a built runner's isolates load one file, not ethers' whole indexes.
// Built here from the sources as they are, into a directory of its own inside the checkout (its
// packages are found in the checkout's node_modules); the tests elsewhere run the sources' thread.
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ISOLATE_ENTRY } from '../../bin/bundle-isolate.js'
import { compileSources, findTsc } from '../../bin/compile.js'
import { TaskIsolation } from '../../src/pipeline/index.ts'
import { DEFAULT_PIPELINE_LIMITS } from '../../src/pipeline/limits.ts'
import { runIsolated, type IsolatedTaskCase } from './support/isolated-task.ts'

const root = resolve(import.meta.dirname, '../..')
mkdirSync(join(root, '.cache'), { recursive: true })
const built = mkdtempSync(join(root, '.cache', 'isolate-build-'))
const options = { threads: 1, memoryMb: 64, context: { limits: DEFAULT_PIPELINE_LIMITS } }
const isolations: TaskIsolation[] = []

beforeAll(async () => {
  const tsc = findTsc()
  if (!tsc) throw new Error('typescript is not installed: npm install')
  expect(await compileSources(`${root}/`, built, tsc)).toEqual({ ok: true })
}, 600_000)
afterAll(async () => {
  await Promise.all(isolations.map((isolation) => isolation.close()))
  rmSync(built, { recursive: true, force: true })
})

/** A started isolation of the built code, or of the sources. */
async function started(from: 'build' | 'sources'): Promise<TaskIsolation> {
  const { TaskIsolation: Built } = (await import(
    join(built, 'pipeline/isolation/task-isolation.js')
  )) as { TaskIsolation: typeof TaskIsolation }
  const isolation = from === 'build' ? new Built(options) : new TaskIsolation(options)
  isolations.push(isolation)
  isolation.warm()
  await isolation.ready()
  return isolation
}

/** A value or an error as text both sides can be compared by (bigints, bytes and Decimals too). */
function plain(outcome: PromiseSettledResult<unknown>): string {
  if (outcome.status === 'rejected') {
    const error = outcome.reason as { message?: string; kind?: string; retryable?: boolean }
    return `failed: ${error.message} (${error.kind}, retryable ${error.retryable})`
  }
  return JSON.stringify(outcome.value, (_key, value: unknown) => {
    if (typeof value === 'bigint') return `${value}n`
    if (value instanceof Uint8Array) return `bytes ${Buffer.from(value).toString('hex')}`
    if (value instanceof Map) return Object.fromEntries(value)
    const decimal = value as { toFixed?: () => string }
    if (value && typeof decimal.toFixed === 'function') return `decimal ${decimal.toFixed()}`
    return value
  })
}

const ORACLE_REQUEST_TOPIC = '0xd8d7ecc4800d25fa53ce0372f13a416d98907a7ef3d8d3bdd79cf4fe75529c65'
const task = (type: string, attributes: Record<string, string>, vars = {}): IsolatedTaskCase => ({
  taskId: type,
  type,
  attributes: { type, ...attributes },
  vars,
})

/** A case of each library the pure tasks use (ethers' ABI coder and Keccak, cbor-x, decimal.js). */
const CASES: IsolatedTaskCase[] = [
  task('jsonparse', { data: '{"a":{"b":[1,"2.50"]}}', path: 'a,b,1' }),
  task(
    'ethabiencode',
    {
      abi: 'fulfil(bytes32 id, uint256 value, address to, string note)',
      data: '{ "id": $(jobRun.id), "value": $(jobRun.value), "to": $(jobRun.to), "note": "é" }',
    },
    { jobRun: { id: `0x${'ab'.repeat(32)}`, value: 10n ** 30n, to: `0x${'de'.repeat(20)}` } },
  ),
  task(
    'ethabidecodelog',
    {
      abi: 'NewRound(uint256 indexed roundId, address indexed startedBy, uint256 startedAt)',
      data: '0x000000000000000000000000000000000000000000000000000000000000000f',
      topics: '$(jobRun.topics)',
    },
    {
      jobRun: {
        topics: [
          '0x0109fc6f55cf40689f02fbaad7af7fe7bbac8a3d2186600afc7d3e10cac60271',
          '0x0000000000000000000000000000000000000000000000000000000000000009',
          '0x000000000000000000000000f17f52151ebef6c7334fad080c5704d77216b732',
        ],
      },
    },
  ),
  task(
    'ethabidecodelog',
    { abi: 'Broken(bytes32 indexed id)', data: '0x', topics: '$(jobRun.t)' },
    {
      jobRun: { t: [ORACLE_REQUEST_TOPIC] },
    },
  ),
  task('cborparse', {
    data: '0xbf6375726c781a68747470733a2f2f657468657270726963652e636f6d2f61706964706174689f66726563656e7463757364ffff',
  }),
  task('multiply', { input: '1.25', times: '1000000000000000000' }),
  task('divide', { input: '10', divisor: '3', precision: '4' }),
  task('median', { values: '[3, 1, "2.5", 7]' }),
  task('mean', { values: '[1, 2, 4]', precision: '3' }),
  task('sum', { values: '[1, "2.5", 3]' }),
  task('hexencode', { input: '255' }),
  task('base64decode', { input: 'aGVsbG8=' }),
  task('uppercase', { input: 'camelCase' }),
  task('lessthan', { left: '1', right: '2' }),
  task('fail', { msg: 'told to fail' }),
]

/** What each case answers (the sources' thread, then the build's, must). */
const EXPECTED: RegExp[] = [
  /^"2.50"$/,
  // The selector (a Keccak), the word of each argument, the string's offset, length and bytes.
  /^"0x967be6bf(ab){32}0{39}c9f2c9cd04674edea40{7}0{24}(de){20}0{62}80/,
  /^\{"roundId":"9n","startedBy":"0xf17f52151EbEF6C7334FAD080c5704D77216b732","startedAt":"15n"\}$/,
  /^failed: topics\[0\] 0xd8d7.* is not the hash of Broken\(bytes32\) \(0xe223d7b1.*bad_input/,
  /^\{"url":"https:\/\/etherprice.com\/api","path":\["recent","usd"\]\}$/,
  /^"1250000000000000000"$/,
  /^"3.3333"$/,
  /^"2.75"$/,
  /^"2.333"$/,
  /^"6.5"$/,
  /^"0x323535"$/,
  /^"bytes 68656c6c6f"$/,
  /^"CAMELCASE"$/,
  /^true$/,
  /^failed: told to fail \(bad_input, retryable false\)$/,
]

describe('the isolate the build makes', () => {
  it('is one file: none of our modules beside it, and the parts of ethers it uses inside it', () => {
    const thread = readFileSync(join(built, ISOLATE_ENTRY), 'utf8')
    const imported = [...thread.matchAll(/(?:\bfrom|\bimport\(?)\s*["']([^"']+)["']/g)].map(
      ([, specifier]) => specifier ?? '',
    )
    expect(imported.length).toBeGreaterThan(0)
    expect(imported.filter((specifier) => specifier.startsWith('.'))).toEqual([])
    expect(imported.filter((specifier) => /^ethers(\/|$)/.test(specifier))).toEqual([])
    expect(thread).toContain('AbiCoder')
  })

  it('answers every case as the sources do, values and errors', async () => {
    const [fromBuild, fromSources] = await Promise.all([started('build'), started('sources')])
    const answers = async (isolation: TaskIsolation) =>
      (await Promise.allSettled(CASES.map((each) => runIsolated(isolation, each, 10_000)))).map(
        plain,
      )
    const [builtAnswers, sourceAnswers] = await Promise.all([
      answers(fromBuild),
      answers(fromSources),
    ])
    expect(sourceAnswers).toEqual(EXPECTED.map((answer) => expect.stringMatching(answer)))
    expect(builtAnswers).toEqual(sourceAnswers)
  }, 120_000)
})
