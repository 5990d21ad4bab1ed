import { createHash, randomUUID } from 'node:crypto'
import { setTimeout as delay } from 'node:timers/promises'
import { Queue, QueueEvents, UnrecoverableError, Worker, type Job } from 'bullmq'
import type { Redis } from 'ioredis'
import { getAddress, type JsonRpcProvider } from 'ethers'
import { z } from 'zod'
import { createRedisConnection } from '../queue/connection.ts'
import { ALREADY_FULFILLED_REASON } from './operator.ts'
import { createJsonRpcClient } from './json-rpc-batch.ts'
import { connectProvider } from './provider.ts'
import { isFatalRefusal, isToleratedRefusal } from './node-refusal.ts'
import { createOrderedBroadcaster } from './ordered-broadcast.ts'
import { revertReasonOf } from './revert.ts'
import { wakeableSleep } from './wakeable-sleep.ts'
import { TxStore, type TxAttempt } from './tx-store.ts'
import { createTxSigner, type TxSigner } from './tx-signer.ts'

export const DEFAULT_GAS_LIMIT = 500_000

export type TxStatus = 'mined' | 'already-fulfilled' | 'reverted'

/** How a submitted transaction ended. `reverted` carries the decoded reason (from the simulation or the mined tx). */
export interface TxResult {
  status: TxStatus
  txHash?: string
  blockNumber?: number
  nonce?: number
  from?: string
  reason?: string
}

const txResultSchema = z.object({
  status: z.enum(['mined', 'already-fulfilled', 'reverted']),
  txHash: z.string().optional(),
  blockNumber: z.number().optional(),
  nonce: z.number().optional(),
  from: z.string().optional(),
  reason: z.string().optional(),
})

export interface TxSubmission {
  to: string
  data: string
  gasLimit?: number
  /** Also the queue job id: a second submit with the same key joins the first (use the request id). */
  idempotencyKey: string
  /** Run it with eth_call before signing and send nothing if that reverts (the result says why). */
  simulate?: boolean
  /**
   * This may repeat an earlier submission (a redelivered run): an earlier job of the same key that
   * failed for good runs again. A first submission skips that look (a Redis script per transaction).
   */
  resubmit?: boolean
}

const jobDataSchema = z.object({
  to: z.string().regex(/^0x[0-9a-fA-F]{40}$/, { message: 'expected an address' }),
  data: z.string().regex(/^0x([0-9a-fA-F]{2})*$/, { message: 'expected 0x hex calldata' }),
  gasLimit: z.number().int().positive().optional(),
  simulate: z.boolean().optional(),
})
type TxJobData = z.infer<typeof jobDataSchema>

export interface TxSenderOptions {
  rpcUrl: string
  chainId?: number
  /** Sender private keys; each gets its own ordered queue and worker. Never logged or queued. */
  keys: readonly string[]
  redisUrl: string
  /** Prefix of the BullMQ queues and of the sender's own Redis keys. */
  prefix: string
  /**
   * The least time between two broadcast batches of one key (default 50 ms); what is signed meanwhile
   * joins the next batch. On a chain with blocks seconds apart the wait changes no block a transaction
   * lands in and saves the node requests; on an automining dev chain the batches fill blocks, and fewer
   * blocks cost the node less (README, Performance: one key's fulfilment blocks 422 -> 279 per 1,000).
   */
  broadcastIntervalMs?: number
  /** Blocks a receipt must be deep before a job ends (1 = mined). */
  confirmations?: number
  /** A transaction not mined after this many blocks is re-sent with the same nonce and +20 % fees. */
  bumpAfterBlocks?: number
  gasLimit?: number
  /** Transactions per key in flight at once (signed in nonce order, receipts awaited together). */
  maxInFlight?: number
  /** How often heads, nonces and receipts are polled. */
  pollIntervalMs?: number
  /** Priority fee (wei); default: what the node suggests at start. */
  priorityFeeWei?: bigint
  /** Bumping stops below this max fee per gas (wei); default 10,000 gwei. */
  maxFeePerGasCapWei?: bigint
  /** BullMQ lock: a job of a crashed process is taken over after about this long. */
  lockDurationMs?: number
  /** close() waits this long for running jobs before it stops them (they are retried elsewhere). */
  closeTimeoutMs?: number
  onError?: (error: Error) => void
}

export interface KeyStats {
  address: string
  nextNonce: number
  pending: number
  sent: number
  bumped: number
  reverted: number
  /** Nonces spent on a filler because the transaction that held them could never be mined. */
  filled: number
}

export interface TxSender {
  /** Starts one worker per key (a process that only submits does not need to). */
  start(): Promise<void>
  submit(submission: TxSubmission, timeoutMs?: number): Promise<TxResult>
  /** Sender addresses, in the order of `keys`. */
  readonly addresses: readonly string[]
  /** The queue name of each key: `tx-<address lowercased>`. */
  readonly queueNames: readonly string[]
  stats(): KeyStats[]
  /** Each key's balance (wei) as the node has it now, in the order of `keys`. */
  balances(): Promise<bigint[]>
  close(): Promise<void>
}

/** The key a job goes to: a stable hash of its idempotency key, so a resubmit finds the same queue. */
export function pickKeyIndex(idempotencyKey: string, keyCount: number): number {
  return createHash('sha256').update(idempotencyKey).digest().readUInt32BE(0) % keyCount
}

/** BullMQ refuses `:` in most custom job ids. */
export function jobIdOf(idempotencyKey: string): string {
  return idempotencyKey.replaceAll(':', '_')
}

export function txQueueName(address: string): string {
  return `tx-${address.toLowerCase()}`
}

/** Another transaction used the nonce this job had signed for: the job must start over. */
class NonceTakenError extends Error {
  override readonly name = 'NonceTakenError'
}

interface Head {
  number: number
  hash: string
  baseFee: bigint | null
}

interface RpcReceipt {
  transactionHash: string
  blockNumber: string
  blockHash: string
  status: string
}

interface UnsignedTx {
  to: string
  data: string
  gasLimit: number
  value: bigint
}

interface PendingTx {
  nonce: number
  jobId: string
  tx: UnsignedTx
  attempts: TxAttempt[]
  sentAtBlock: number
  misses: number
  bumping: boolean
  receipt?: RpcReceipt
  resolve: (receipt: RpcReceipt) => void
  reject: (error: Error) => void
}

type Fees = { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }

/** A job waiting for its turn in a key's ordered part. */
interface SigningRequest {
  jobId: string
  tx: UnsignedTx
  /** Set when the job already holds a nonce (a crash left it allocated but unsigned). */
  nonce: number | undefined
  fees: Fees
  filler: boolean
  resolve: (signed: Signed) => void
  reject: (error: Error) => void
}

interface Signed {
  allocated: number
  attempt: TxAttempt
  /** The broadcast, under way. */
  sending: Promise<void>
}

/** Records of filler transactions in the tx store are kept under ids with this prefix (never a job's). */
const FILLER_ID_PREFIX = 'filler-'

/**
 * Sends transactions from one or more keys through BullMQ: one queue and one worker per key.
 *
 * Throughput comes from splitting each job in two: the ordered part (allocate the nonce in Redis,
 * sign locally with a cached fee, record the signed bytes, broadcast) runs one job at a time per key,
 * while waiting for receipts is shared: one poll loop checks every key's nonce and the receipts of
 * what it sent, so up to `maxInFlight` jobs per key wait at once.
 *
 * Crash safety: a job's nonce and signed transaction are in Redis before the transaction leaves, so
 * a retried job (BullMQ hands a crashed worker's job to another after its lock expires) broadcasts the
 * same bytes again instead of signing a second transaction with a new nonce.
 */
export function createTxSender(options: TxSenderOptions): TxSender {
  if (options.keys.length === 0) throw new Error('createTxSender: at least one key is required')
  const confirmations = Math.max(1, options.confirmations ?? 1)
  const bumpAfterBlocks = Math.max(1, options.bumpAfterBlocks ?? 3)
  const defaultGasLimit = options.gasLimit ?? DEFAULT_GAS_LIMIT
  const maxInFlight = options.maxInFlight ?? 64
  const broadcastIntervalMs = options.broadcastIntervalMs ?? 50
  const pollIntervalMs = options.pollIntervalMs ?? 250
  const lockDurationMs = options.lockDurationMs ?? 15_000
  const maxFeeCap = options.maxFeePerGasCapWei ?? 10n ** 13n
  const closeTimeoutMs = options.closeTimeoutMs ?? 10_000
  const signers = options.keys.map(createTxSigner)
  const addresses = signers.map((signer) => signer.address)
  const queueNames = addresses.map(txQueueName)

  // BullMQ does not close connections it was given: every one made here is closed in close().
  const connections: Redis[] = []
  const connect = (autoPipelining = false): Redis => {
    const connection = createRedisConnection(options.redisUrl, 'worker', {
      enableAutoPipelining: autoPipelining,
    })
    // While Redis is away the connection reconnects by itself; without a listener ioredis prints an
    // "Unhandled error event" with a stack trace for every attempt. Outages surface through onError.
    connection.on('error', () => undefined)
    connections.push(connection)
    return connection
  }
  // Nonce allocations and signed attempts of concurrent jobs leave in one write per tick.
  const redis = connect(true)
  const queues = queueNames.map((name) => {
    const queue = new Queue(name, { connection: connect(true), prefix: options.prefix })
    // Every add in flight listens for 'closing'; hundreds of concurrent submits are normal here.
    queue.setMaxListeners(0)
    queue.on('error', () => undefined)
    return queue
  })
  const queueEvents = new Map<number, QueueEvents>()
  let provider: JsonRpcProvider | undefined
  let chainId = options.chainId
  let priorityFee = options.priorityFeeWei
  let head: Head | undefined
  let pollLoop: Promise<void> | undefined
  let polling = false
  const keySenders: KeySender[] = []
  const reportError = (error: unknown) =>
    options.onError?.(error instanceof Error ? error : new Error(String(error)))

  async function rpc(): Promise<JsonRpcProvider> {
    if (!provider) {
      const connected = await connectProvider(httpUrlOf(options.rpcUrl), {
        chainId: options.chainId,
        pollingIntervalMs: pollIntervalMs,
      })
      provider = connected as JsonRpcProvider
      chainId ??= Number((await provider.getNetwork()).chainId)
    }
    return provider
  }

  // Raw calls (heads, nonces, receipts, broadcasts) go through a batching client; ethers' provider is
  // kept for eth_call, whose revert data it decodes.
  const node = createJsonRpcClient(httpUrlOf(options.rpcUrl))
  function send<T>(method: string, params: unknown[]): Promise<T> {
    return node.call<T>(method, params)
  }

  async function readHead(): Promise<Head> {
    const block = await send<{ number: string; hash: string; baseFeePerGas?: string } | null>(
      'eth_getBlockByNumber',
      ['latest', false],
    )
    if (!block) throw new Error('the node returned no latest block')
    head = {
      number: Number(block.number),
      hash: block.hash,
      baseFee: block.baseFeePerGas ? BigInt(block.baseFeePerGas) : null,
    }
    return head
  }

  async function currentFees(): Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> {
    const known = head ?? (await readHead())
    if (priorityFee === undefined) {
      priorityFee =
        known.baseFee === null
          ? 0n
          : BigInt(await send<string>('eth_maxPriorityFeePerGas', []).catch(() => '0x3b9aca00'))
    }
    if (known.baseFee === null) {
      const gasPrice = BigInt(await send<string>('eth_gasPrice', []))
      return { maxFeePerGas: gasPrice, maxPriorityFeePerGas: gasPrice }
    }
    return { maxFeePerGas: known.baseFee * 2n + priorityFee, maxPriorityFeePerGas: priorityFee }
  }

  async function broadcast(raw: string): Promise<void> {
    try {
      await send('eth_sendRawTransaction', [raw])
    } catch (error) {
      if (isToleratedRefusal(errorText(error))) return
      throw error
    }
  }

  /** Runs the transaction against the latest state; returns the revert reason, or undefined if it would succeed. */
  async function simulate(
    from: string,
    tx: UnsignedTx,
    blockTag: string | number = 'latest',
  ): Promise<string | undefined> {
    try {
      await (await rpc()).call({ from, to: tx.to, data: tx.data, gasLimit: tx.gasLimit, blockTag })
      return undefined
    } catch (error) {
      const reason = revertReasonOf(error)
      if (reason === undefined) throw error
      return reason
    }
  }

  class KeySender {
    readonly address: string
    readonly store: TxStore
    readonly pending = new Map<number, PendingTx>()
    worker: Worker<TxJobData, TxResult> | undefined
    nextNonce = 0
    /** The key's mined nonce count at the last check, and the block where it last moved. */
    private minedNonce = -1
    private progressBlock = 0
    sent = 0
    bumped = 0
    reverted = 0
    filled = 0
    /** The block of the last look for nonces nobody is waiting for (see fillHoles). */
    private holeCheckBlock = Number.NEGATIVE_INFINITY
    private readonly signingQueue: SigningRequest[] = []
    private signingBusy = false
    private readonly broadcaster = createOrderedBroadcaster(
      httpUrlOf(options.rpcUrl),
      isToleratedRefusal,
      { minIntervalMs: broadcastIntervalMs },
    )

    constructor(
      readonly index: number,
      private readonly signer: TxSigner,
    ) {
      this.address = signer.address
      this.store = new TxStore(redis, `${options.prefix}:txstate:${this.address.toLowerCase()}`)
    }

    /** Nonce from the chain, raised past anything still in flight; re-broadcasts what a crash left signed. */
    async recover(): Promise<void> {
      const [pendingCount, latestCount] = await Promise.all([
        send<string>('eth_getTransactionCount', [this.address, 'pending']).then(Number),
        send<string>('eth_getTransactionCount', [this.address, 'latest']).then(Number),
      ])
      let next = pendingCount
      for (const { jobId, nonce } of await this.store.inflight(latestCount)) {
        next = Math.max(next, nonce + 1)
        const state = await this.store.load(jobId)
        const last = state.attempts.at(-1) ?? (await this.signOrphan(jobId, nonce))
        // A refusal must not keep the sender from starting: the job's retry meets it again.
        await this.afterRefusal(jobId, nonce, state.attempts, broadcast(last.raw)).catch(
          reportError,
        )
      }
      await this.store.setNextNonce(next)
      this.nextNonce = next
    }

    /**
     * A crash between allocating a nonce and recording the signed transaction leaves a hole that
     * blocks every later nonce, and the later jobs hold the worker's slots while they wait: sign the
     * job's transaction now (from its queued data), or a filler if the job is gone. Its retry then
     * finds the attempt and only waits for it.
     */
    private async signOrphan(jobId: string, nonce: number): Promise<TxAttempt> {
      const job = await (queues[this.index] as Queue<TxJobData, TxResult>).getJob(jobId)
      const parsed = job ? jobDataSchema.safeParse(job.data) : undefined
      const tx: UnsignedTx = parsed?.success
        ? {
            to: getAddress(parsed.data.to),
            data: parsed.data.data,
            gasLimit: parsed.data.gasLimit ?? defaultGasLimit,
            value: 0n,
          }
        : fillerTx(this.address)
      const attempt = await this.sign(tx, nonce, await currentFees(), !parsed?.success)
      await this.store.addAttempt(jobId, [attempt])
      return attempt
    }

    start(): void {
      this.worker = new Worker<TxJobData, TxResult>(
        queueNames[this.index] as string,
        (job) => this.process(job),
        {
          connection: connect(true),
          prefix: options.prefix,
          concurrency: maxInFlight,
          lockDuration: lockDurationMs,
          stalledInterval: lockDurationMs,
          maxStalledCount: 10,
        },
      )
      this.worker.on('failed', (job, error) =>
        reportError(
          new Error(`tx job ${job?.id ?? '?'} from ${this.address} failed: ${error.message}`),
        ),
      )
      this.worker.on('error', reportError)
    }

    /**
     * Allocates the job's nonce (unless it holds one), signs and records its attempt, and hands it to
     * the broadcaster, in the order jobs arrive here. Jobs that arrive while a batch is being signed
     * form the next batch: its nonce allocations and its recorded attempts each leave for Redis in one
     * write (the store's connection pipelines commands issued together, and Redis runs them in order),
     * so a key is not limited to one transaction per two Redis round trips.
     */
    private signInOrder(request: Omit<SigningRequest, 'resolve' | 'reject'>): Promise<Signed> {
      return new Promise<Signed>((resolve, reject) => {
        this.signingQueue.push({ ...request, resolve, reject })
        if (!this.signingBusy) void this.drainSigning()
      })
    }

    private async drainSigning(): Promise<void> {
      this.signingBusy = true
      try {
        while (this.signingQueue.length > 0)
          await this.signBatch(this.signingQueue.splice(0, this.signingQueue.length))
      } finally {
        this.signingBusy = false
      }
    }

    private async signBatch(batch: SigningRequest[]): Promise<void> {
      const fallbackNext = this.nextNonce
      const nonces = await Promise.allSettled(
        batch.map((item) =>
          item.nonce === undefined
            ? this.store.allocateNonce(item.jobId, fallbackNext)
            : Promise.resolve(item.nonce),
        ),
      )
      const attempts: Array<TxAttempt | Error> = []
      for (const [index, item] of batch.entries()) {
        const nonce = nonces[index] as PromiseSettledResult<number>
        if (nonce.status === 'rejected') {
          attempts.push(asError(nonce.reason))
          continue
        }
        this.nextNonce = Math.max(this.nextNonce, nonce.value + 1)
        attempts.push(await this.sign(item.tx, nonce.value, item.fees, item.filler).catch(asError))
      }
      const recorded = await Promise.allSettled(
        batch.map((item, index) => {
          const attempt = attempts[index] as TxAttempt | Error
          return attempt instanceof Error
            ? Promise.reject(attempt)
            : this.store.addAttempt(item.jobId, [attempt])
        }),
      )
      // Handed to the broadcaster in batch order, which is nonce order.
      for (const [index, item] of batch.entries()) {
        const outcome = recorded[index] as PromiseSettledResult<void>
        const attempt = attempts[index]
        if (outcome.status === 'rejected' || !attempt || attempt instanceof Error) {
          item.reject(
            outcome.status === 'rejected'
              ? asError(outcome.reason)
              : new Error('the transaction was not signed'),
          )
          continue
        }
        const allocated = (nonces[index] as PromiseFulfilledResult<number>).value
        item.resolve({
          allocated,
          attempt,
          sending: this.broadcaster.send(attempt.raw).finally(wakePollLoop),
        })
      }
    }

    private async sign(
      tx: UnsignedTx,
      nonce: number,
      fees: { maxFeePerGas: bigint; maxPriorityFeePerGas: bigint },
      filler = false,
    ): Promise<TxAttempt> {
      if (chainId === undefined)
        throw new Error('the chain id is not known yet: start the sender first')
      const common = {
        chainId,
        nonce,
        to: tx.to,
        data: tx.data,
        value: tx.value,
        gasLimit: tx.gasLimit,
      }
      const { raw, hash } = this.signer.sign(
        head?.baseFee === null
          ? { ...common, type: 0, gasPrice: fees.maxFeePerGas }
          : { ...common, type: 2, ...fees },
      )
      return {
        hash,
        raw,
        maxFeePerGas: fees.maxFeePerGas.toString(),
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas.toString(),
        ...(filler ? { filler } : {}),
      }
    }

    async process(job: Job<TxJobData, TxResult>): Promise<TxResult> {
      const data = jobDataSchema.parse(job.data)
      const jobId = job.id as string
      const tx: UnsignedTx = {
        to: getAddress(data.to),
        data: data.data,
        gasLimit: data.gasLimit ?? defaultGasLimit,
        value: 0n,
      }
      for (;;) {
        try {
          return await this.runOnce(jobId, tx, data.simulate === true)
        } catch (error) {
          if (!(error instanceof NonceTakenError)) throw error
          await this.store.forget(jobId)
        }
      }
    }

    private async runOnce(
      jobId: string,
      tx: UnsignedTx,
      simulateFirst: boolean,
    ): Promise<TxResult> {
      const state = await this.store.load(jobId)
      let attempts = state.attempts
      let nonce = state.nonce
      let outcome: TxResult | undefined
      let sentTx = tx
      if (attempts.length === 0) {
        // A job that holds a nonce but no signature lost it in a crash: by now its request may have
        // been answered, and the nonce is spent on a filler rather than on a revert.
        const reason =
          simulateFirst || nonce !== undefined ? await simulate(this.address, tx) : undefined
        if (reason !== undefined) {
          outcome = {
            status: reason.includes(ALREADY_FULFILLED_REASON) ? 'already-fulfilled' : 'reverted',
            reason,
            from: this.address,
          }
          if (nonce === undefined) return outcome
          // A crash left this job holding a nonce it no longer needs; spend it so later ones can mine.
          sentTx = fillerTx(this.address)
        }
        const filler = outcome !== undefined
        const fees = await currentFees()
        const signed = await this.signInOrder({ jobId, tx: sentTx, nonce, fees, filler })
        nonce = signed.allocated
        attempts = [signed.attempt]
        this.sent += 1
        await this.afterRefusal(jobId, nonce, [], signed.sending)
      } else {
        // Signed by an earlier run of this job: send the same bytes again, never a new nonce.
        if (nonce === undefined) throw new Error(`tx job ${jobId}: signed attempts without a nonce`)
        const last = attempts.at(-1) as TxAttempt
        if (last.filler) sentTx = fillerTx(this.address)
        await this.afterRefusal(jobId, nonce, attempts, broadcast(last.raw))
      }

      const receipt = await this.track(nonce, jobId, sentTx, attempts)
      await this.store.settle(jobId)
      const blockNumber = Number(receipt.blockNumber)
      if (attempts.at(-1)?.filler || sentTx !== tx) {
        return (
          outcome ?? {
            status: 'already-fulfilled',
            reason: 'nonce spent by a filler transaction',
            from: this.address,
          }
        )
      }
      if (receipt.status === '0x1')
        return {
          status: 'mined',
          txHash: receipt.transactionHash,
          blockNumber,
          nonce,
          from: this.address,
        }
      this.reverted += 1
      // Replay to learn why: on the state before its block, then (when an earlier transaction of the
      // same block caused the revert) on the state after it.
      const replay = (blockTag: number) =>
        simulate(this.address, tx, blockTag).catch(() => undefined)
      const reason =
        (await replay(blockNumber - 1)) ?? (await replay(blockNumber)) ?? 'reverted on chain'
      return {
        status: 'reverted',
        txHash: receipt.transactionHash,
        blockNumber,
        nonce,
        from: this.address,
        reason,
      }
    }

    /**
     * Waits for a broadcast of the job's transaction. Bytes the node refuses for good would leave the
     * job's nonce unused and every later transaction of the key behind it: the nonce goes to a filler,
     * and the job fails without retries, with the node's words. Other refusals are thrown as they are
     * (the job's retry sends the same bytes again).
     */
    private async afterRefusal(
      jobId: string,
      nonce: number,
      attempts: readonly TxAttempt[],
      sending: Promise<void>,
    ): Promise<void> {
      try {
        await sending
      } catch (error) {
        const words = errorText(error).trim()
        if (!isFatalRefusal(words)) throw error
        const filled = await this.fillNonce(nonce, { jobId, attempts })
        const spent = filled
          ? `; its nonce ${nonce} went to a filler transaction, so the key's later transactions are not held back`
          : ''
        throw new UnrecoverableError(`the node refused the transaction for good: ${words}${spent}`)
      }
    }

    /**
     * Spends `nonce` on a filler (a zero-value transfer to the key itself) once the transaction that
     * held it can never be mined, priced above anything its holder put in the node's pool. False when
     * the nonce is not to be had: its holder moved on, or another process filled it first. A filler
     * the node refuses stays recorded and tracked: the stalled key bumps it, a restart sends it again.
     */
    private async fillNonce(
      nonce: number,
      holder?: { jobId: string; attempts: readonly TxAttempt[] },
    ): Promise<boolean> {
      const fillerId = `${FILLER_ID_PREFIX}${nonce}-${randomUUID()}`
      if (!(await this.store.claimForFiller(fillerId, nonce, holder?.jobId))) return false
      const tx = fillerTx(this.address)
      const attempt = await this.sign(
        tx,
        nonce,
        feesAbove(holder?.attempts.at(-1), await currentFees()),
        true,
      )
      await this.store.addAttempt(fillerId, [attempt])
      this.filled += 1
      if (!this.pending.has(nonce)) {
        this.track(nonce, fillerId, tx, [attempt])
          .then(
            () => this.store.settle(fillerId),
            (error: unknown) =>
              error instanceof NonceTakenError ? this.store.forget(fillerId) : undefined,
          )
          .catch(reportError)
      }
      await broadcast(attempt.raw).catch((error: unknown) =>
        reportError(
          new Error(
            `the filler for nonce ${nonce} of ${this.address} was refused: ${errorText(error).trim()}`,
          ),
        ),
      )
      wakePollLoop()
      return true
    }

    /**
     * A stalled key whose lowest unmined nonce nobody here waits for may have holes: nonces whose job
     * failed for good (its transaction refused, or never sent) or whose record is gone. Those up to
     * the lowest nonce waited for go to fillers. A nonce whose job is queued, retrying or running (in
     * any process) is left to that job, which bumps it when the key stalls.
     */
    private async fillHoles(current: Head, latest: number): Promise<void> {
      const waited = [...this.pending.keys()].filter((nonce) => nonce >= latest)
      if (waited.length === 0 || this.pending.has(latest)) return
      if (
        current.number - this.progressBlock < bumpAfterBlocks ||
        current.number - this.holeCheckBlock < bumpAfterBlocks
      )
        return
      this.holeCheckBlock = current.number
      const lowestWaited = Math.min(...waited)
      const holders = await this.store.inflight(latest, lowestWaited - 1)
      for (let nonce = latest; nonce < lowestWaited; nonce++) {
        const holder = holders.find((entry) => entry.nonce === nonce)
        if (holder && (await this.isLive(holder.jobId))) return
        const attempts = holder ? (await this.store.load(holder.jobId)).attempts : []
        if (!(await this.fillNonce(nonce, holder && { jobId: holder.jobId, attempts }))) return
      }
    }

    /** A job that will still send or watch its transaction. A filler watched here is in `pending`. */
    private async isLive(jobId: string): Promise<boolean> {
      if (jobId.startsWith(FILLER_ID_PREFIX)) return false
      const state = await (queues[this.index] as Queue<TxJobData, TxResult>).getJobState(jobId)
      return state !== 'failed' && state !== 'completed' && state !== 'unknown'
    }

    private track(
      nonce: number,
      jobId: string,
      tx: UnsignedTx,
      attempts: TxAttempt[],
    ): Promise<RpcReceipt> {
      return new Promise<RpcReceipt>((resolve, reject) => {
        // A job retried just as its nonce went to a filler: the job watches the nonce from here on.
        const earlier = this.pending.get(nonce)
        if (earlier?.jobId.startsWith(FILLER_ID_PREFIX))
          earlier.reject(
            new NonceTakenError(`nonce ${nonce} of ${this.address} is watched by job ${jobId}`),
          )
        this.pending.set(nonce, {
          nonce,
          jobId,
          tx,
          attempts,
          sentAtBlock: head?.number ?? 0,
          misses: 0,
          bumping: false,
          resolve,
          reject,
        })
      })
    }

    /** One look at the chain for this key: receipts, confirmations, stuck transactions. */
    async check(current: Head): Promise<void> {
      if (this.pending.size === 0) return
      const latest = Number(await send<string>('eth_getTransactionCount', [this.address, 'latest']))
      if (latest !== this.minedNonce) {
        this.minedNonce = latest
        this.progressBlock = current.number
      }
      await Promise.all(
        [...this.pending.values()].map((entry) => this.checkOne(entry, current, latest)),
      )
      await this.fillHoles(current, latest)
    }

    private async checkOne(entry: PendingTx, current: Head, latestNonce: number): Promise<void> {
      if (entry.receipt) {
        if (current.number < Number(entry.receipt.blockNumber) + confirmations - 1) return
        if (confirmations > 1) {
          // Deep enough: make sure the block holding it is still the canonical one.
          const again = await send<RpcReceipt | null>('eth_getTransactionReceipt', [
            entry.receipt.transactionHash,
          ])
          if (!again || again.blockHash !== entry.receipt.blockHash) {
            entry.receipt = undefined
            return
          }
        }
        this.pending.delete(entry.nonce)
        entry.resolve(entry.receipt)
        return
      }
      if (entry.nonce < latestNonce) {
        const receipts = await Promise.all(
          entry.attempts.map((attempt) =>
            send<RpcReceipt | null>('eth_getTransactionReceipt', [attempt.hash]),
          ),
        )
        const found = receipts.find((receipt): receipt is RpcReceipt => receipt !== null)
        if (found) {
          entry.receipt = found
          return this.checkOne(entry, current, latestNonce)
        }
        entry.misses += 1
        if (entry.misses >= 3) {
          this.pending.delete(entry.nonce)
          entry.reject(
            new NonceTakenError(
              `nonce ${entry.nonce} of ${this.address} was used by another transaction`,
            ),
          )
        }
        return
      }
      if (entry.bumping || current.number - entry.sentAtBlock < bumpAfterBlocks) return
      // Waiting behind earlier nonces is not being stuck. Only the key's lowest unmined nonce can hold
      // the others back, so a stalled key bumps that one; bumping every pending transaction made each
      // replacement a new pool event and, on anvil, another empty block, round after round up to the
      // fee cap. A transaction whose fee cap is under the current base fee cannot be mined whatever
      // comes before it, so it is bumped too (a fee spike prices out the whole queue at once).
      const stalled = current.number - this.progressBlock >= bumpAfterBlocks
      const blocking = stalled && entry.nonce === latestNonce
      if (blocking || pricedOut(entry, current)) {
        entry.bumping = true
        try {
          await this.bump(entry, current)
        } finally {
          entry.bumping = false
        }
      }
    }

    /** Re-signs a stuck transaction with the same nonce and at least 20 % higher fees. */
    private async bump(entry: PendingTx, current: Head): Promise<void> {
      const last = entry.attempts.at(-1) as TxAttempt
      const { maxFeePerGas, maxPriorityFeePerGas } = feesAbove(last, await currentFees())
      if (maxFeePerGas > maxFeeCap) {
        entry.sentAtBlock = current.number
        reportError(
          new Error(
            `nonce ${entry.nonce} of ${this.address} is stuck but a bump would pass the fee cap of ${maxFeeCap} wei`,
          ),
        )
        return
      }
      const attempt = await this.sign(
        entry.tx,
        entry.nonce,
        { maxFeePerGas, maxPriorityFeePerGas },
        last.filler === true,
      )
      const attempts = [...entry.attempts, attempt]
      await this.store.addAttempt(entry.jobId, attempts)
      entry.attempts = attempts
      entry.sentAtBlock = current.number
      this.bumped += 1
      await broadcast(attempt.raw)
    }

    failAll(error: Error): void {
      for (const entry of this.pending.values()) entry.reject(error)
      this.pending.clear()
    }
  }

  // The poll loop sleeps between looks at the chain; a broadcast that was just answered wakes it, as
  // on a fast chain (an automining dev chain answers once the block is mined) the receipt is there.
  const pollPause = wakeableSleep()
  const wakePollLoop = (): void => pollPause.wake()

  async function runPollLoop(): Promise<void> {
    while (polling) {
      try {
        const current = await readHead()
        await Promise.all(keySenders.map((keySender) => keySender.check(current)))
      } catch (error) {
        reportError(error)
      }
      if (!polling) break
      await pollPause.sleep(pollIntervalMs)
    }
  }

  async function eventsOf(index: number): Promise<QueueEvents> {
    let events = queueEvents.get(index)
    if (!events) {
      events = new QueueEvents(queueNames[index] as string, {
        connection: connect(),
        prefix: options.prefix,
      })
      events.on('error', () => undefined)
      queueEvents.set(index, events)
      await events.waitUntilReady()
    }
    return events
  }

  return {
    addresses,
    queueNames,
    async start() {
      await rpc()
      await readHead()
      await currentFees()
      signers.forEach((signer, index) => keySenders.push(new KeySender(index, signer)))
      await Promise.all(keySenders.map((keySender) => keySender.recover()))
      polling = true
      pollLoop = runPollLoop()
      for (const keySender of keySenders) keySender.start()
    },
    async submit(submission, timeoutMs) {
      const data = jobDataSchema.parse({
        to: submission.to,
        data: submission.data,
        gasLimit: submission.gasLimit,
        simulate: submission.simulate,
      })
      if (!submission.idempotencyKey) throw new Error('submit: idempotencyKey is required')
      const index = pickKeyIndex(submission.idempotencyKey, queues.length)
      const events = await eventsOf(index)
      const queue = queues[index] as Queue<TxJobData, TxResult>
      const jobId = jobIdOf(submission.idempotencyKey)
      const job = await queue.add('tx', data, {
        jobId,
        attempts: 5,
        backoff: { type: 'exponential', delay: 500 },
        removeOnComplete: { age: 24 * 3600 },
        removeOnFail: { age: 7 * 24 * 3600 },
      })
      // A resubmit joins the existing job; one that failed for good (say the node was down) runs again.
      if (submission.resubmit === true && (await queue.getJobState(jobId)) === 'failed')
        await (await queue.getJob(jobId))?.retry('failed')
      return txResultSchema.parse(await job.waitUntilFinished(events, timeoutMs))
    },
    stats() {
      return keySenders.map((keySender) => ({
        address: keySender.address,
        nextNonce: keySender.nextNonce,
        pending: keySender.pending.size,
        sent: keySender.sent,
        bumped: keySender.bumped,
        reverted: keySender.reverted,
        filled: keySender.filled,
      }))
    },
    balances() {
      return Promise.all(
        addresses.map((address) =>
          send<string>('eth_getBalance', [address, 'latest']).then(BigInt),
        ),
      )
    },
    async close() {
      // Let running jobs finish their wait for receipts, but not forever (a dead node would hold them).
      // A worker's close, once begun, waits for its running jobs whatever it is asked later, so the
      // jobs still waiting are failed: BullMQ retries them, and the tx store keeps their attempts.
      await Promise.all(
        keySenders.map(async (keySender) => {
          const worker = keySender.worker
          if (!worker) return
          const closing = worker.close()
          const finished = await Promise.race([
            closing.then(() => true),
            delay(closeTimeoutMs, false, { ref: false }),
          ])
          if (!finished) keySender.failAll(new Error('tx sender closed before the receipt'))
          await closing
        }),
      )
      polling = false
      pollPause.wake()
      await pollLoop
      for (const keySender of keySenders) keySender.failAll(new Error('tx sender closed'))
      await Promise.all([...queueEvents.values()].map((events) => events.close()))
      await Promise.all(queues.map((queue) => queue.close()))
      await Promise.all(
        connections.map((connection) => connection.quit().catch(() => connection.disconnect())),
      )
      provider?.destroy()
    },
  }
}

/** The sender polls and sends over HTTP whatever the configured URL: a WebSocket adds nothing to either. */
function httpUrlOf(rpcUrl: string): string {
  return rpcUrl.replace(/^ws(s?):/, 'http$1:')
}

/** The transaction's latest attempt offers less than the current base fee: no block can include it. */
function pricedOut(entry: PendingTx, current: Head): boolean {
  const last = entry.attempts.at(-1)
  return (
    last !== undefined && current.baseFee !== null && BigInt(last.maxFeePerGas) < current.baseFee
  )
}

/**
 * Fees for a transaction that replaces `last` in the node's pool (20 % more, as a Chainlink node bumps;
 * geth asks at least 10 % of a replacement) and still meets the market; the market alone when nothing
 * is to be replaced.
 */
function feesAbove(last: TxAttempt | undefined, market: Fees): Fees {
  if (!last) return market
  const raise = (value: bigint) => (value * 12n + 9n) / 10n
  const maxPriorityFeePerGas = maxOf(
    raise(BigInt(last.maxPriorityFeePerGas)),
    market.maxPriorityFeePerGas,
  )
  return {
    maxPriorityFeePerGas,
    maxFeePerGas: maxOf(
      raise(BigInt(last.maxFeePerGas)),
      market.maxFeePerGas,
      maxPriorityFeePerGas,
    ),
  }
}

/** A 0-value transfer to oneself: spends a nonce without doing anything. */
function fillerTx(address: string): UnsignedTx {
  return { to: address, data: '0x', gasLimit: 21_000, value: 0n }
}

function asError(reason: unknown): Error {
  return reason instanceof Error ? reason : new Error(String(reason))
}

function maxOf(...values: bigint[]): bigint {
  return values.reduce((a, b) => (a > b ? a : b))
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const nested = (error as Error & { error?: { message?: string } }).error?.message
    return `${error.message} ${nested ?? ''}`
  }
  return String(error)
}
