import { Transaction, keccak256 } from 'ethers'
import { Redis } from 'ioredis'
import { operatorInterface } from '../src/chain/operator.ts'
import { RunStore } from '../src/runner/run-record.ts'
import {
  keyStates,
  readOperatorLogs,
  sendersOf,
  blockTimes,
  fatesOf,
  type ChainEvent,
} from './chain-read.ts'
import type { History, OutcomeFact, RequestFact, RunFact, SignedFact } from './history.ts'
import type { Broadcast } from './rpc-proxy.ts'
import { QUEUE_PREFIX, type ChaosStack } from './stack.ts'

/** What the harness knows of the requests it made: each transaction's purpose and expected answer. */
export interface SentRequests {
  purposeOf(txHash: string): string | undefined
  expectedOf(purpose: string): bigint | undefined
}

/** Reads the history of a schedule from the chain, the proxy's broadcasts and the run records. */
export async function collectHistory(
  stack: ChaosStack,
  sent: SentRequests,
): Promise<Omit<History, 'stops' | 'startFailures' | 'gone'>> {
  const anvilUrl = stack.anvil.rpcUrl
  const { operator, consumer } = stack.contracts.addresses
  const [logs, times] = await Promise.all([
    readOperatorLogs(anvilUrl, operator, consumer),
    blockTimes(anvilUrl),
  ])
  const timeOf = (block: number) => times.unwarped[block] ?? Number.NaN
  const requests: RequestFact[] = logs.requests.map((log) => {
    const purpose = sent.purposeOf(log.txHash)
    const expected = purpose === undefined ? undefined : sent.expectedOf(purpose)
    return {
      requestId: log.requestId,
      ...(purpose === undefined ? {} : { purpose }),
      ...(expected === undefined ? {} : { expected }),
      block: log.block,
      at: timeOf(log.block),
      // cancelExpiration is on the request block's (warped) scale: the same distance on the unwarped one.
      expiresAt: timeOf(log.block) + (Number(log.cancelExpiration) - (times.raw[log.block] ?? 0)),
    }
  })
  const senders = await sendersOf(
    anvilUrl,
    logs.responses.map((response) => response.txHash),
  )
  const outcome = (event: ChainEvent): OutcomeFact => ({
    ...event,
    at: timeOf(event.block),
    ...(senders.get(event.txHash) ?? {}),
  })
  const signed = decodeBroadcasts(stack.rpcProxy.broadcasts)
  const runs = await readRuns(
    stack,
    requests.map((request) => request.requestId),
  )
  const named = [...runs.values()].flatMap((run) => (run?.txHash ? [run.txHash.toLowerCase()] : []))
  return {
    requests,
    responses: logs.responses.map(outcome),
    cancels: logs.cancels.map(outcome),
    values: logs.values,
    signed,
    keys: await keyStates(anvilUrl, stack.nodeAddresses),
    fates: await fatesOf(anvilUrl, [...new Set([...signed.map((tx) => tx.hash), ...named])]),
    runs,
  }
}

/** The runners' raw transactions, decoded; one that does not decode is left out. */
export function decodeBroadcasts(broadcasts: readonly Broadcast[]): SignedFact[] {
  const signed: SignedFact[] = []
  for (const { at, raw } of broadcasts) {
    let tx: Transaction
    try {
      tx = Transaction.from(raw)
    } catch {
      continue
    }
    if (!tx.from || !tx.hash) continue
    const call = tx.to ? parseFulfilment(tx.data) : undefined
    signed.push({
      at,
      hash: tx.hash.toLowerCase(),
      from: tx.from.toLowerCase(),
      nonce: tx.nonce,
      ...(call ? { fulfils: call } : {}),
      effect: `${(tx.to ?? '').toLowerCase()}:${keccak256(tx.data)}:${tx.value}`,
    })
  }
  return signed
}

function parseFulfilment(data: string): string | undefined {
  try {
    const parsed = operatorInterface.parseTransaction({ data })
    if (parsed?.name !== 'fulfillOracleRequest2') return undefined
    return String(parsed.args.requestId).toLowerCase()
  } catch {
    return undefined
  }
}

/** Each request's run record, through the RunStore, from the current primary (not the proxy). */
async function readRuns(
  stack: ChaosStack,
  requestIds: readonly string[],
): Promise<Map<string, RunFact | undefined>> {
  const redis = new Redis(stack.redis.directUrl, { maxRetriesPerRequest: 2 })
  try {
    const store = new RunStore(redis, `${QUEUE_PREFIX}:runner`, stack.contracts.chainId)
    const runs = new Map<string, RunFact | undefined>()
    for (const id of requestIds) {
      const run = await store.get(id)
      runs.set(
        id,
        run && {
          state: run.state,
          ...(run.reason ? { reason: run.reason } : {}),
          ...(run.txHash ? { txHash: run.txHash } : {}),
        },
      )
    }
    return runs
  } finally {
    redis.disconnect()
  }
}
