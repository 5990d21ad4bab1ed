import { once } from 'node:events'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { afterAll, describe, expect, it } from 'vitest'
import { TASK_TYPES } from '../../src/pipeline/index.ts'
import { ISOLATE_READY } from '../../src/pipeline/isolation/messages.ts'
import { PURE_TASK_TYPES } from '../../src/pipeline/tasks/pure.ts'

/**
 * An isolate holds its own copy of every module it loads (about 40 MB each when it loaded every task
 * type, the settings schema and all of ethers; a runner keeps three). It loads the pure task types
 * and what they use, nothing of the network tasks, the settings or the rest of the process.
 */
const dir = mkdtempSync(join(tmpdir(), 'feedrunner-isolate-modules-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The packages (ethers by its part) an isolate has loaded once it says it is ready. */
async function packagesOfAnIsolate(): Promise<Set<string>> {
  const list = join(dir, 'modules.txt')
  const worker = new Worker(
    new URL('../../src/pipeline/isolation/isolate-thread.ts', import.meta.url),
    {
      workerData: {},
      execArgv: [
        '--import',
        import.meta.resolve('tsx'),
        '--import',
        new URL('../support/module-trace.mjs', import.meta.url).href,
      ],
      env: { ...process.env, MODULE_TRACE: list },
    },
  )
  try {
    const [said] = (await once(worker, 'message')) as unknown[]
    expect(said).toBe(ISOLATE_READY)
  } finally {
    await worker.terminate()
  }
  const packages = new Set<string>()
  for (const url of readFileSync(list, 'utf8').split('\n')) {
    const found = /\/node_modules\/((?:@[^/]+\/)?[^/]+)\/(?:lib\.esm\/([^/.]+)\/)?/.exec(url)
    if (found?.[1] === 'ethers' && found[2]) packages.add(`ethers/${found[2]}`)
    else if (found?.[1]) packages.add(found[1])
  }
  return packages
}

describe('what an isolate loads', () => {
  it('the pure task types are every task type that does not run on the main thread', () => {
    const pure = [...TASK_TYPES].filter(([, definition]) => definition.runsIn !== 'main')
    expect(new Map(pure)).toEqual(PURE_TASK_TYPES)
    for (const [type, definition] of PURE_TASK_TYPES) expect(TASK_TYPES.get(type)).toBe(definition)
  })

  it('loads neither the network tasks, the settings schema, nor the parts of ethers no pure task uses', async () => {
    const packages = await packagesOfAnIsolate()
    // What the pure tasks use is there (the trace works).
    for (const used of ['ethers/abi', 'cbor-x', 'decimal.js', 'jsonpath-plus'])
      expect(packages).toContain(used)
    const never = [
      'undici',
      'zod',
      'pino',
      'bullmq',
      'ioredis',
      'prom-client',
      '@chainlink/external-adapter-framework',
      'ethers/providers',
      'ethers/wallet',
      'ethers/wordlists',
      'ethers/contract',
      // cbor-x's decoder alone: its main entry in node loads a native string extractor (~3 MB).
      'cbor-extract',
    ]
    expect(never.filter((name) => packages.has(name))).toEqual([])
  }, 120_000)
})
