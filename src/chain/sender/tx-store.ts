import type { Redis } from 'ioredis'
import { z } from 'zod'
import { luaScriptFile } from '../../queue/lua-script.ts'
import { txResultSchema, type TxResult } from './types.ts'

/** One signed transaction for a job's nonce; a bump adds another with the same nonce. */
export interface TxAttempt {
  hash: string
  raw: string
  maxFeePerGas: string
  maxPriorityFeePerGas: string
  /** A filler spends an allocated nonce whose job no longer needs a transaction. */
  filler?: boolean
}

const attemptSchema = z.object({
  hash: z.string(),
  raw: z.string(),
  maxFeePerGas: z.string(),
  maxPriorityFeePerGas: z.string(),
  filler: z.boolean().optional(),
})

const storedTxSchema = z.object({
  to: z.string(),
  data: z.string(),
  gasLimit: z.number().int().positive(),
})
export type StoredTx = z.infer<typeof storedTxSchema>

/** What Redis holds of a job: the key and nonce its transaction went to, and how it ended. */
export interface TxJobRecord {
  /** The sender key the job's transaction is bound to (lower case). */
  from: string
  nonce: number
  attempts: TxAttempt[]
  tx?: StoredTx
  /** Set once the transaction is final: a retried run anywhere answers with it. */
  result?: TxResult
}

/** A job of a batch whose first attempt is recorded before it is broadcast. */
export interface FirstAttempt {
  jobId: string
  nonce: number
  attempt: TxAttempt
  tx: StoredTx
}

/** How a batch's recording went: `not-owner`, or per job in order 'recorded' up to the first 'exists'. */
export type RecordAnswer = 'not-owner' | 'behind' | Array<'recorded' | 'exists'>

const RECORD_ATTEMPTS = luaScriptFile(new URL('./store/record-attempts.lua', import.meta.url), {
  keys: ['owner', 'counter', 'inflight'],
  args: ['fence', 'job_base', 'address', 'ttl'],
})
const SYNC_NONCE = luaScriptFile(new URL('./store/sync-nonce.lua', import.meta.url), {
  keys: ['owner', 'counter'],
  args: ['fence', 'next_nonce'],
})
const STORE_ATTEMPTS = luaScriptFile(new URL('./store/store-attempts.lua', import.meta.url), {
  keys: ['owner', 'job'],
  args: ['fence', 'attempts', 'address', 'nonce'],
})
const CLAIM_FILLER = luaScriptFile(new URL('./store/claim-filler.lua', import.meta.url), {
  keys: ['owner', 'inflight', 'filler', 'holder'],
  args: ['fence', 'nonce', 'filler_id', 'holder_id', 'address', 'ttl'],
})
const SETTLE = luaScriptFile(new URL('./store/settle.lua', import.meta.url), {
  keys: ['inflight', 'mined', 'job'],
  args: ['job_id', 'result', 'mined_in', 'final_below', 'address', 'nonce'],
})
const UNSETTLE = luaScriptFile(new URL('./store/unsettle.lua', import.meta.url), {
  keys: ['inflight', 'mined', 'job'],
  args: ['job_id', 'nonce', 'address'],
})
const FORGET = luaScriptFile(new URL('./store/forget.lua', import.meta.url), {
  keys: ['inflight', 'mined', 'job'],
  args: ['job_id', 'nonce', 'address'],
})

/**
 * A chain's transaction state in Redis, under `<prefix>:txstate:<chain id>` (the prefix's hash tag
 * keeps it in one Cluster slot):
 *
 * - `job:<job id>`, a hash per job (what a request's ethtx asked): the key it is bound to, its nonce,
 *   its signed attempts, its transaction, and its result once final. A job is bound to one key for
 *   good: a run retried in another process finds it and waits for that key's owner. Only when Redis
 *   loses the record can a run bind it again, to another key or nonce; every write a key's owner
 *   makes of the job afterwards checks the record is still its own (key and nonce), so what the
 *   first transaction did never lands on the second's record nor in the first key's indexes.
 * - `<address>:nonce`, the key's next nonce; `<address>:inflight`, its jobs not final yet by nonce;
 *   `<address>:mined`, its jobs mined less than CHAIN_FINALITY_DEPTH deep, by block (a reorg may still
 *   take them away); `<address>:owner`, the key's lease (see ownership/key-leases.ts).
 *
 * Every write that could hand a nonce out or put bytes on their way is fenced: it checks in the same
 * script that the writer's fence still owns the key.
 */
export class TxStore {
  constructor(
    private readonly redis: Redis,
    private readonly base: string,
    private readonly ttlSeconds = 7 * 24 * 3600,
  ) {}

  private jobKey = (jobId: string) => `${this.base}:job:${jobId}`
  private keyBase = (address: string) => `${this.base}:${address.toLowerCase()}`
  private owner = (address: string) => `${this.keyBase(address)}:owner`

  /**
   * The job's record while Redis binds it to `address` (at `nonce`, when given): what the key's
   * indexes name may since have been bound again elsewhere, after Redis lost the first record.
   */
  async loadBound(
    address: string,
    jobId: string,
    nonce?: number,
  ): Promise<TxJobRecord | undefined> {
    const record = await this.load(jobId)
    if (record?.from !== address.toLowerCase()) return undefined
    return nonce === undefined || record.nonce === nonce ? record : undefined
  }

  /** The job's record, or undefined when it has none (never sent, or Redis lost it). */
  async load(jobId: string): Promise<TxJobRecord | undefined> {
    const fields = await this.redis.hgetall(this.jobKey(jobId))
    if (fields.from === undefined || fields.nonce === undefined) return undefined
    return {
      from: fields.from,
      nonce: Number(fields.nonce),
      attempts: z.array(attemptSchema).parse(JSON.parse(fields.attempts ?? '[]')),
      ...(fields.tx ? { tx: storedTxSchema.parse(JSON.parse(fields.tx)) } : {}),
      ...(fields.result ? { result: txResultSchema.parse(JSON.parse(fields.result)) } : {}),
    }
  }

  /** Records a batch's first attempts under `fence` (see record-attempts.lua). */
  async recordFirstAttempts(
    address: string,
    fence: string,
    batch: readonly FirstAttempt[],
  ): Promise<RecordAnswer> {
    const base = this.keyBase(address)
    const answers = (await RECORD_ATTEMPTS.run(
      this.redis,
      { owner: `${base}:owner`, counter: `${base}:nonce`, inflight: `${base}:inflight` },
      {
        fence,
        job_base: `${this.base}:job:`,
        address: address.toLowerCase(),
        ttl: this.ttlSeconds,
      },
      batch.flatMap((job) => [
        job.jobId,
        job.nonce,
        JSON.stringify([job.attempt]),
        JSON.stringify(job.tx),
      ]),
    )) as number[]
    if (answers[0] === -1) return 'not-owner'
    if (answers[0] === -2) return 'behind'
    return answers.map((answer) => (answer === 1 ? 'recorded' : 'exists'))
  }

  /** Raises the key's next nonce to at least `next`; the next nonce, or undefined when not the owner. */
  async syncNonce(address: string, fence: string, next: number): Promise<number | undefined> {
    const base = this.keyBase(address)
    const answer = Number(
      await SYNC_NONCE.run(
        this.redis,
        { owner: `${base}:owner`, counter: `${base}:nonce` },
        { fence, next_nonce: next },
      ),
    )
    return answer < 0 ? undefined : answer
  }

  /**
   * Replaces the attempts of a job bound to the key at `nonce` (a bump, a filler's signature) under
   * `fence`; false when not stored.
   */
  async storeAttempts(
    address: string,
    fence: string,
    job: { jobId: string; nonce: number },
    attempts: readonly TxAttempt[],
  ): Promise<boolean> {
    const answer = await STORE_ATTEMPTS.run(
      this.redis,
      { owner: this.owner(address), job: this.jobKey(job.jobId) },
      {
        fence,
        attempts: JSON.stringify(attempts),
        address: address.toLowerCase(),
        nonce: job.nonce,
      },
    )
    return Number(answer) === 1
  }

  /** Gives `nonce` to the filler `fillerId` (see claim-filler.lua); false when it is not to be had. */
  async claimForFiller(
    address: string,
    fence: string,
    claim: { fillerId: string; nonce: number; holderJobId?: string },
  ): Promise<boolean> {
    const holder = claim.holderJobId ?? claim.fillerId
    const answer = await CLAIM_FILLER.run(
      this.redis,
      {
        owner: this.owner(address),
        inflight: `${this.keyBase(address)}:inflight`,
        filler: this.jobKey(claim.fillerId),
        holder: this.jobKey(holder),
      },
      {
        fence,
        nonce: claim.nonce,
        filler_id: claim.fillerId,
        holder_id: claim.holderJobId ?? '',
        address: address.toLowerCase(),
        ttl: this.ttlSeconds,
      },
    )
    return Number(answer) === 1
  }

  /**
   * A job's transaction is final: its result is kept, and one mined in a block (`minedIn`) is kept in
   * the key's index of mined transactions until `finalityDepth` deep, for the key's next owner to
   * watch for a reorg (settle.lua).
   */
  async settle(
    address: string,
    job: { jobId: string; nonce: number },
    result: TxResult,
    finality?: { minedIn?: number; head: number; finalityDepth: number },
  ): Promise<void> {
    await SETTLE.run(this.redis, this.jobKeys(address, job.jobId), {
      job_id: job.jobId,
      result: JSON.stringify(result),
      mined_in: finality?.minedIn ?? '',
      final_below: finality ? finality.head - finality.finalityDepth + 2 : '',
      address: address.toLowerCase(),
      nonce: job.nonce,
    })
  }

  /**
   * A job whose mined transaction a reorg took away: in flight again (its result goes; its record, if
   * Redis still has it, is watched again by whoever owns the key next).
   */
  async unsettle(address: string, job: { jobId: string; nonce: number }): Promise<void> {
    await UNSETTLE.run(this.redis, this.jobKeys(address, job.jobId), {
      job_id: job.jobId,
      nonce: job.nonce,
      address: address.toLowerCase(),
    })
  }

  /** Forgets a job whose nonce another transaction took: a retry starts over, simulating first. */
  async forget(address: string, job: { jobId: string; nonce: number }): Promise<void> {
    await FORGET.run(this.redis, this.jobKeys(address, job.jobId), {
      job_id: job.jobId,
      nonce: job.nonce,
      address: address.toLowerCase(),
    })
  }

  /** The key's indexes and the job's record, as the scripts about one job of a key take them. */
  private jobKeys(address: string, jobId: string) {
    return {
      inflight: `${this.keyBase(address)}:inflight`,
      mined: `${this.keyBase(address)}:mined`,
      job: this.jobKey(jobId),
    }
  }

  /** The key's next nonce as stored (undefined when Redis has none: a first start, or lost state). */
  async nextNonce(address: string): Promise<number | undefined> {
    const value = await this.redis.get(`${this.keyBase(address)}:nonce`)
    return value === null ? undefined : Number(value)
  }

  /** The key's jobs whose transaction is not final yet, lowest nonce first. */
  async inflight(address: string): Promise<Array<{ jobId: string; nonce: number }>> {
    const scored = await this.jobsBy(`${this.keyBase(address)}:inflight`)
    return scored.map(({ jobId, score }) => ({ jobId, nonce: score }))
  }

  /** The key's mined transactions a reorg could still take away, with the block each was mined in. */
  async mined(address: string): Promise<Array<{ jobId: string; minedIn: number }>> {
    const scored = await this.jobsBy(`${this.keyBase(address)}:mined`)
    return scored.map(({ jobId, score }) => ({ jobId, minedIn: score }))
  }

  /** The job ids of a sorted set with their scores, lowest first. */
  private async jobsBy(key: string): Promise<Array<{ jobId: string; score: number }>> {
    const flat = await this.redis.zrange(key, 0, -1, 'WITHSCORES')
    const entries: Array<{ jobId: string; score: number }> = []
    for (let at = 0; at < flat.length; at += 2)
      entries.push({ jobId: flat[at] as string, score: Number(flat[at + 1]) })
    return entries
  }
}
