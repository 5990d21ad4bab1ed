import type { Log, Provider } from 'ethers'
import { FeedrunnerError } from '../config/errors.ts'
import { decodeOperatorLog, ORACLE_REQUEST_TOPIC, type OracleRequestEvent } from './operator.ts'

/** Where a recorded OracleRequest log is: its transaction, or its block hash and log index. */
export type RequestLogLocator =
  { txHash: string; requestId?: string } | { blockHash: string; logIndex: number }

/** `0x<block hash>:<log index>`, as `jobs run --log` takes it. */
export function parseLogLocator(text: string): { blockHash: string; logIndex: number } {
  const match = /^(0x[0-9a-fA-F]{64}):(\d+)$/.exec(text.trim())
  if (!match)
    throw new FeedrunnerError(
      `--log ${JSON.stringify(text)}: expected <blockHash>:<logIndex>, such as 0x3f5e...c2a1:4`,
      { kind: 'bad_input' },
    )
  return { blockHash: match[1]!, logIndex: Number(match[2]) }
}

/**
 * Reads a recorded `OracleRequest` log from the chain and decodes it as the listener would. A
 * transaction with several requests needs `requestId` to pick one.
 */
export async function readOracleRequest(
  provider: Provider,
  locator: RequestLogLocator,
): Promise<OracleRequestEvent> {
  const chainId = Number((await provider.getNetwork()).chainId)
  const logs = await logsOf(provider, locator)
  const requests = logs
    .filter((log) => log.topics[0] === ORACLE_REQUEST_TOPIC)
    .map((log) => decodeOperatorLog(log, chainId))
    .filter((event): event is OracleRequestEvent => event?.kind === 'request')
  const where =
    'txHash' in locator
      ? `transaction ${locator.txHash}`
      : `block ${locator.blockHash} log ${locator.logIndex}`
  const wanted =
    'txHash' in locator && locator.requestId
      ? requests.filter((event) => event.requestId === locator.requestId!.toLowerCase())
      : requests
  if (wanted.length === 0)
    throw new FeedrunnerError(
      `${where} has no OracleRequest log${'txHash' in locator && locator.requestId ? ` for request ${locator.requestId}` : ''} on chain ${chainId}`,
      { kind: 'bad_input' },
    )
  if (wanted.length > 1)
    throw new FeedrunnerError(
      `${where} holds ${wanted.length} OracleRequest logs (requests ${wanted.map((event) => event.requestId).join(', ')}): name one with --log <blockHash>:<logIndex>`,
      { kind: 'bad_input' },
    )
  return wanted[0]!
}

async function logsOf(provider: Provider, locator: RequestLogLocator): Promise<readonly Log[]> {
  if ('txHash' in locator) {
    const receipt = await provider.getTransactionReceipt(locator.txHash)
    if (!receipt)
      throw new FeedrunnerError(
        `transaction ${locator.txHash} is not on this chain (no receipt): check RPC_URL and the hash`,
        { kind: 'bad_input' },
      )
    return receipt.logs
  }
  const logs = await provider.getLogs({ blockHash: locator.blockHash })
  const log = logs.find((candidate) => candidate.index === locator.logIndex)
  return log ? [log] : []
}
