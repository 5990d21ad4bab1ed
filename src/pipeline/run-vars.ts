import { FeedrunnerError } from '../config/errors.ts'
import type { BlockRoots } from './chain-access.ts'
import type { Job } from './job-spec/loader.ts'
import { readsBlockRoots } from './vars.ts'

/**
 * The `jobSpec` variables of a run, as a node gives them to a directrequest run. `databaseID` is the
 * node's row id of the job; feedrunner has no database, so it is a number derived from the
 * externalJobID (its first 31 bits, at least 1): the same on every start and every process.
 */
export function jobSpecVars(job: Job): Record<string, unknown> {
  const spec = job.spec
  return {
    databaseID: databaseIdOf(spec.externalJobID),
    name: spec.name,
    externalJobID: spec.externalJobID,
    // The Operator of a directrequest job, the FluxAggregator of a fluxmonitor job: both declare it.
    contractAddress: 'contractAddress' in spec ? spec.contractAddress : undefined,
    // Chainlink passes the chain id as text.
    evmChainID: spec.evmChainID?.toString(),
    gasLimit: spec.gasLimit === undefined ? undefined : BigInt(spec.gasLimit),
  }
}

export function databaseIdOf(externalJobID: string): number {
  return Math.max(1, Number.parseInt(externalJobID.replace(/-/g, '').slice(0, 8), 16) & 0x7fffffff)
}

/**
 * `jobRun` with the roots of the request's block (`blockReceiptsRoot`, ...) when the job reads them:
 * read with `blockRoots` from the block of `logBlockHash`. A read that fails leaves the variables as
 * that error, so a task reading them fails with it (retryable when the node was away).
 */
export async function withBlockRoots(
  job: Job,
  jobRun: Record<string, unknown>,
  blockRoots: ((blockHash: string) => Promise<BlockRoots>) | undefined,
): Promise<Record<string, unknown>> {
  if ('blockReceiptsRoot' in jobRun || !readsBlockRoots(job.tasks.map((task) => task.attributes)))
    return jobRun
  const blockHash = jobRun.logBlockHash
  let roots: BlockRoots | Error
  if (typeof blockHash !== 'string')
    roots = new FeedrunnerError(
      'the block roots are read from the chain, and this request has no block (a request built for a dry run: run it with --tx or --log)',
      { kind: 'bad_input' },
    )
  else if (!blockRoots)
    roots = new FeedrunnerError('no chain to read the block roots from', { kind: 'config' })
  else roots = await blockRoots(blockHash).catch((error: unknown) => error as Error)
  return {
    ...jobRun,
    blockReceiptsRoot: roots instanceof Error ? roots : roots.receiptsRoot,
    blockTransactionsRoot: roots instanceof Error ? roots : roots.transactionsRoot,
    blockStateRoot: roots instanceof Error ? roots : roots.stateRoot,
  }
}
