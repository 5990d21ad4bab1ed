import { JsonRpcProvider } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readBlockRoots } from '../../src/chain/block-roots.ts'
import { startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { loadJobSpec, runJob, type Job } from '../../src/pipeline/index.ts'
import { databaseIdOf } from '../../src/pipeline/run-vars.ts'

// The run variables Chainlink documents for directrequest jobs (docs.chain.link, "Job types",
// direct request): jobSpec.databaseID/externalJobID/name, jobRun.log* and meta, and the roots of the
// request's block, read from a real chain.

function job(source: string): Job {
  const { job, problems } = loadJobSpec(
    [
      'type = "directrequest"',
      'schemaVersion = 1',
      'name = "vars"',
      'externalJobID = "0eec7e1d-d0d2-476c-a1a8-72dfb6633f46"',
      'contractAddress = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"',
      'observationSource = """',
      source,
      '"""',
    ].join('\n'),
    'vars.toml',
  )
  if (!job) throw new Error(problems.map((problem) => problem.message).join('\n'))
  return job
}

const ROOTS =
  'roots [type=memo value=<[$(jobRun.blockReceiptsRoot), $(jobRun.blockTransactionsRoot), $(jobRun.blockStateRoot)]>]'

let anvil: Anvil
let provider: JsonRpcProvider
beforeAll(async () => {
  anvil = await startAnvil()
  provider = new JsonRpcProvider(anvil.rpcUrl, undefined, { staticNetwork: true })
})
afterAll(async () => {
  provider?.destroy()
  await anvil?.stop()
})

describe('run variables', () => {
  it('jobSpec.databaseID: a number derived from externalJobID, the same on every run', async () => {
    const result = await runJob(job('id [type=memo value="$(jobSpec.databaseID)"]'))
    expect(result.errors).toEqual([])
    expect(String(result.outputs[0])).toBe(String(0x0eec7e1d))
    expect(databaseIdOf('8eec7e1d-0000-0000-0000-000000000000')).toBe(0x0eec7e1d)
  })

  it("jobRun.block*Root: the roots of the log's block, read from the chain only when a job uses them", async () => {
    const block = (await provider.send('eth_getBlockByNumber', ['latest', false])) as Record<
      string,
      string
    >
    const reads: string[] = []
    const result = await runJob(job(ROOTS), {
      jobRun: { logBlockHash: block.hash },
      blockRoots: (hash) => {
        reads.push(hash)
        return readBlockRoots(provider, hash)
      },
    })
    expect(result.errors).toEqual([])
    expect(result.outputs[0]).toEqual([block.receiptsRoot, block.transactionsRoot, block.stateRoot])
    expect(reads).toEqual([block.hash])
    await runJob(job('id [type=memo value="1"]'), {
      jobRun: { logBlockHash: block.hash },
      blockRoots: (hash) => (reads.push(hash), readBlockRoots(provider, hash)),
    })
    expect(reads).toHaveLength(1)
  })

  it('a block the node does not know, or no block at all (a built request), fails the task that reads it', async () => {
    const unknown = await runJob(job(ROOTS), {
      jobRun: { logBlockHash: `0x${'11'.repeat(32)}` },
      blockRoots: (hash) => readBlockRoots(provider, hash),
    })
    expect(unknown.errors[0]).toContain('does not know the block')
    const built = await runJob(job(ROOTS), { jobRun: {} })
    expect(built.errors[0]).toContain('run it with --tx or --log')
  })

  it('a variable Chainlink does not document is refused at load, naming what a run has', () => {
    const { problems } = loadJobSpec(
      [
        'type = "directrequest"',
        'schemaVersion = 1',
        'name = "x"',
        'contractAddress = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"',
        'observationSource = """',
        'a [type=memo value="$(jobRun.blockRoot)"]',
        '"""',
      ].join('\n'),
      'x.toml',
    )
    expect(problems[0]!.message).toContain(
      'jobRun.blockReceiptsRoot, jobRun.blockTransactionsRoot, jobRun.blockStateRoot',
    )
  })
})
