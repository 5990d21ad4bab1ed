import type { JsonRpcProvider } from 'ethers'
import type { Redis } from 'ioredis'
import type { Logger } from '../../config/logger.ts'
import type { OracleRequestEvent } from '../../chain/operator.ts'
import type { RequestListener } from '../../chain/listener/index.ts'
import type { TxSender } from '../../chain/sender/index.ts'
import { RedisGeneration } from './generation.ts'
import { answeredRequestIds, openWindowStart, waitForPoolsToDrain } from './open-requests.ts'

export { createReconciler, type Reconciler } from './reconciler.ts'

/** What the chain said of the requests in a window read again: which of them are closed already. */
interface WindowFilter {
  upToBlock: number
  headTimestamp: number
  answered: ReadonlySet<string>
}

export interface RecoveryParts {
  redis: Redis
  prefix: string
  provider: JsonRpcProvider
  operators: readonly string[]
  log: Logger
  /** How often the generation key is read. */
  checkEveryMs: number
  /** How long a rebuild waits for the keys' transactions in the node's pool to be mined. */
  drainBoundMs?: number
}

export interface Recovery {
  /**
   * Where a listener with no checkpoint starts: the oldest block whose requests may still be open
   * (not past their cancelExpiration), and the filter that skips those answered already.
   */
  openWindow(): Promise<number>
  /**
   * What to do with a delivered request: `skip` one from the window read again that the Operator
   * answered or that expired, `run-again` one from that window that is still open (a run record a
   * process of the lost generation wrote must not keep it from running), `run` any other.
   */
  verdict(event: OracleRequestEvent): 'skip' | 'run-again' | 'run'
  /** Watches for a Redis that lost its state; rebuilds the listener and the sender from the chain. */
  watch(listener: RequestListener | undefined, sender: TxSender | undefined): Promise<void>
  /** Reads the generation once now (what the watch does every `checkEveryMs`). */
  check(): Promise<boolean>
  stop(): Promise<void>
}

/**
 * Redis is a cache of the chain. When it loses what it held (FLUSHALL, an empty instance in its place,
 * a failover to a replica that lags), the runner notices the generation key gone, says so in one line,
 * and rebuilds: every key's nonce is read from the chain again once the node's pool holds none of its
 * transactions (a fulfilment sent before the loss is mined first, so it is not sent twice), and the
 * OracleRequest logs are read again back to the oldest request still open; the ones the Operator
 * answered or that expired are skipped, the others run again.
 */
export function createRecovery(parts: RecoveryParts): Recovery {
  const generationKey = `${parts.prefix}:generation`
  const generation = new RedisGeneration(parts.redis, generationKey)
  let filter: WindowFilter | undefined
  let timer: NodeJS.Timeout | undefined
  let checking: Promise<boolean> | undefined
  let listener: RequestListener | undefined
  let sender: TxSender | undefined

  async function readWindow(): Promise<number> {
    const window = await openWindowStart(parts.provider)
    const answered = await answeredRequestIds(
      parts.provider,
      parts.operators,
      window.fromBlock,
      window.head,
    )
    filter = { upToBlock: window.head, headTimestamp: window.headTimestamp, answered }
    return window.fromBlock
  }

  async function rebuild(): Promise<void> {
    parts.log.warn(
      { key: generationKey },
      'Redis lost its state (the generation key is gone): rebuilding from the chain',
    )
    if (sender) {
      const { drained } = await waitForPoolsToDrain(
        parts.provider,
        sender.addresses,
        parts.drainBoundMs ?? 120_000,
      )
      if (!drained)
        parts.log.warn(
          'the node still holds transactions of the sender keys; nonces are read from the chain as they are',
        )
      await sender.resyncNonces()
    }
    if (listener) {
      const fromBlock = await readWindow()
      await listener.rewind(fromBlock)
      parts.log.warn(
        { fromBlock, answeredOnChain: filter?.answered.size ?? 0 },
        'rebuilt from the chain: reading OracleRequest logs again from the oldest request not past its cancelExpiration',
      )
    }
  }

  async function check(): Promise<boolean> {
    if (!(await generation.lost())) return false
    await rebuild()
    return true
  }

  return {
    openWindow: readWindow,
    verdict(event) {
      if (!filter || event.blockNumber > filter.upToBlock) return 'run'
      if (filter.answered.has(event.requestId.toLowerCase())) return 'skip'
      return event.cancelExpiration > BigInt(filter.headTimestamp) ? 'run-again' : 'skip'
    },
    async watch(watchedListener, watchedSender) {
      listener = watchedListener
      sender = watchedSender
      await generation.adopt()
      timer = setInterval(() => {
        // One check at a time; while Redis is away the check fails and the connection's own
        // reporter says so.
        checking ??= check()
          .catch(() => false)
          .finally(() => (checking = undefined))
      }, parts.checkEveryMs)
      timer.unref()
    },
    check,
    async stop() {
      clearInterval(timer)
      await checking
    },
  }
}
