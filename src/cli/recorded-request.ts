import { formatUnits } from 'ethers'
import { connectProvider } from '../chain/provider.ts'
import { FeedrunnerError } from '../config/errors.ts'
import { specIdsOfJob } from '../chain/operator.ts'
import { parseLogLocator, readOracleRequest } from '../chain/request-log.ts'
import { readBlockRoots } from '../chain/block-roots.ts'
import type { BlockRoots, GasEstimateRequest, Job, RecordedRequest } from '../pipeline/index.ts'
import { recordedRequest } from '../runner/request-payload.ts'
import { settingsOrExit } from './lifecycle.ts'

export interface RecordedRequestOptions {
  tx?: string
  log?: string
  requestId?: string
}

/** The default chain of `feedrunner dev`, when RPC_URL is not set. */
const DEV_RPC_URL = 'http://127.0.0.1:8545'

/**
 * The OracleRequest `jobs run --tx/--log` runs: read from the chain at RPC_URL, described on stdout
 * (who asked, what they paid, when it expires), with `eth_call` for the pipeline's ethcall tasks.
 */
export async function readRecordedRequest(
  job: Job,
  options: RecordedRequestOptions,
): Promise<{
  recorded: RecordedRequest
  call: (tx: { to: string; data: string }) => Promise<string>
  estimateGas: (request: GasEstimateRequest) => Promise<bigint>
  blockRoots: (blockHash: string) => Promise<BlockRoots>
  close(): void
}> {
  const rpcUrl = settingsOrExit().RPC_URL ?? DEV_RPC_URL
  const provider = await connectProvider(rpcUrl, {}).catch((error: unknown) => {
    throw new FeedrunnerError(`cannot reach the chain at RPC_URL ${rpcUrl}`, {
      kind: 'unavailable',
      cause: error,
    })
  })
  try {
    const event = await readOracleRequest(
      provider,
      options.log
        ? parseLogLocator(options.log)
        : { txHash: options.tx ?? '', requestId: options.requestId },
    )
    console.log(
      `request ${event.requestId} (tx ${event.txHash}, block ${event.blockNumber}, log ${event.logIndex}) on chain ${event.chainId}`,
    )
    console.log(
      `  requester ${event.requester}, payment ${formatUnits(event.payment, 18)} LINK, callback ${event.callbackAddr} ${event.callbackFunctionId}, expires ${new Date(Number(event.cancelExpiration) * 1000).toISOString()}`,
    )
    if (!specIdsOfJob(job.spec.externalJobID).includes(event.specId))
      console.log(
        `  note: the request names spec id ${event.specId}, not this job's (externalJobID ${job.spec.externalJobID}); running it with this spec anyway`,
      )
    console.log('')
    return {
      recorded: recordedRequest(event),
      call: (tx) => provider.call({ to: tx.to, data: tx.data }),
      estimateGas: (request) =>
        provider.estimateGas({ from: request.from, to: request.to, data: request.data }),
      blockRoots: (blockHash) => readBlockRoots(provider, blockHash),
      close: () => provider.destroy(),
    }
  } catch (error) {
    provider.destroy()
    throw error
  }
}
