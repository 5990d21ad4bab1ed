import { Transaction, keccak256 } from 'ethers'
import { Redis } from 'ioredis'
import { RunStore, type RunRecord } from '../src/runner/run-record.ts'
import {
  fulfilmentOf,
  keyStates,
  readBlocks,
  readOperatorLogs,
  sendersOf,
  fatesOf,
  type ChainEvent,
} from './chain-read.ts'
import type {
  FulfilmentFact,
  History,
  OutcomeFact,
  RequestFact,
  RunFact,
  SignedFact,
} from './history.ts'
import { readFluxFacts } from './flux-read.ts'
import type { Broadcast } from './rpc-proxy.ts'
import { QUEUE_PREFIX, type ChaosStack } from './stack.ts'

/** What the harness knows of the requests it made: each transaction's purpose and expected answer. */
export interface SentRequests {
  purposeOf(txHash: string): string | undefined
  expectedOf(purpose: string): bigint | undefined
}

/** What the chain, the proxy and Redis hold; the harness adds what it did (faults, stops). */
export type Collected = Omit<
  History,
  | 'stops'
  | 'startFailures'
  | 'gone'
  | 'faults'
  | 'lockMs'
  | 'startedAt'
  | 'stoppedAt'
  | 'cronEveryMs'
>

/** Reads the history of a schedule from the chain, the proxy's broadcasts and the run records. */
export async function collectHistory(stack: ChaosStack, sent: SentRequests): Promise<Collected> {
  const anvilUrl = stack.anvil.rpcUrl
  const { operator, consumer } = stack.contracts.addresses
  const [logs, blocks] = await Promise.all([
    readOperatorLogs(anvilUrl, operator, consumer),
    readBlocks(anvilUrl, stack.nodeAddresses, {
      ...(stack.pushed ? { pushed: stack.pushed } : {}),
      ...(stack.flux ? { aggregator: stack.flux.aggregator } : {}),
    }),
  ])
  const timeOf = (block: number) => blocks.unwarped[block] ?? Number.NaN
  const requests: RequestFact[] = logs.requests.map((log) => {
    const purpose = sent.purposeOf(log.txHash)
    const expected = purpose === undefined ? undefined : sent.expectedOf(purpose)
    return {
      requestId: log.requestId,
      ...(purpose === undefined ? {} : { purpose }),
      ...(expected === undefined ? {} : { expected }),
      block: log.block,
      index: log.index,
      at: timeOf(log.block),
      cancelExpiration: log.cancelExpiration,
      // cancelExpiration is on the request block's (warped) scale: the same distance on the unwarped one.
      expiresAt: timeOf(log.block) + (Number(log.cancelExpiration) - (blocks.raw[log.block] ?? 0)),
      expired: log.cancelExpiration <= BigInt(blocks.raw.at(-1) ?? 0),
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
    fulfilments: withSendHeads(blocks.fulfilments, signed),
    cancels: logs.cancels.map(outcome),
    pushes: blocks.pushes,
    values: logs.values,
    signed,
    keys: await keyStates(anvilUrl, stack.nodeAddresses),
    fates: await fatesOf(anvilUrl, [...new Set([...signed.map((tx) => tx.hash), ...named])]),
    runs,
    ...(stack.flux && {
      flux: await readFluxFacts(
        anvilUrl,
        stack.flux,
        withSendHeads(blocks.fluxCalls, signed),
        timeOf,
      ),
    }),
  }
}

/**
 * Each mined fulfilment with the head the proxy read when it first saw it or an earlier attempt of
 * its nonce with the same call (a fee bump is signed again without a new simulation).
 */
export function withSendHeads<T extends { hash: string }>(
  mined: readonly T[],
  signed: readonly SignedFact[],
): Array<T & Pick<FulfilmentFact, 'sentAt' | 'sentAtHead'>> {
  const first = new Map<string, SignedFact>()
  for (const tx of signed) {
    const family = `${tx.from}:${tx.nonce}:${tx.effect}`
    const known = first.get(family)
    if (!known || tx.at < known.at) first.set(family, tx)
  }
  const byHash = new Map(signed.map((tx) => [tx.hash, tx]))
  return mined.map((tx) => {
    const seen = byHash.get(tx.hash)
    const earliest = seen && first.get(`${seen.from}:${seen.nonce}:${seen.effect}`)
    return {
      ...tx,
      ...(earliest ? { sentAt: earliest.at } : {}),
      ...(earliest?.head === undefined ? {} : { sentAtHead: earliest.head }),
    }
  })
}

/** The runners' raw transactions, decoded; one that does not decode is left out. */
export function decodeBroadcasts(broadcasts: readonly Broadcast[]): SignedFact[] {
  const signed: SignedFact[] = []
  for (const { at, raw, head } of broadcasts) {
    let tx: Transaction
    try {
      tx = Transaction.from(raw)
    } catch {
      continue
    }
    if (!tx.from || !tx.hash) continue
    const call = tx.to ? fulfilmentOf(tx.data)?.requestId : undefined
    signed.push({
      at,
      ...(head === undefined ? {} : { head }),
      hash: tx.hash.toLowerCase(),
      from: tx.from.toLowerCase(),
      nonce: tx.nonce,
      ...(call ? { fulfils: call } : {}),
      effect: `${(tx.to ?? '').toLowerCase()}:${keccak256(tx.data)}:${tx.value}`,
    })
  }
  return signed
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
      runs.set(id, run && runFact(run))
    }
    return runs
  } finally {
    redis.disconnect()
  }
}

function runFact(run: RunRecord): RunFact {
  const at = run.times[run.state]
  return {
    state: run.state,
    ...(run.reason ? { reason: run.reason } : {}),
    ...(run.txHash ? { txHash: run.txHash } : {}),
    ...(at === undefined ? {} : { at }),
    ...(run.failure ? { failureKind: run.failure.kind } : {}),
    ...(run.failure?.code ? { failureCode: run.failure.code } : {}),
    ...(run.quarantined ? { quarantined: true } : {}),
  }
}
