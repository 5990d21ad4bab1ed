import type { Redis } from 'ioredis'
import { z } from 'zod'
import { luaScript } from '../../queue/lua-script.ts'

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

export interface TxJobState {
  nonce?: number
  attempts: TxAttempt[]
  /** The transaction the job's nonce was allocated for (unchecked: the sender parses it). */
  tx?: unknown
  /** Why the job failed for good (its bytes refused by the node), until a resubmit clears it. */
  failed?: string
}

/**
 * Allocates the key's next nonce to a job, once: a job that already holds a nonce keeps it. The
 * counter, the job's nonce and the in-flight index change together, so a crash cannot leave a nonce
 * allocated without a record of whose it is. Without a counter (Redis lost its state) and without a
 * fallback it allocates nothing and answers -1: the caller asks the chain where the key is.
 */
const ALLOCATE_NONCE = luaScript(`
local existing = redis.call('HGET', KEYS[2], 'nonce')
if existing then return tonumber(existing) end
local counter = redis.call('GET', KEYS[1])
if not counter and ARGV[2] == '' then return -1 end
local nonce = tonumber(counter or ARGV[2])
redis.call('SET', KEYS[1], nonce + 1)
if ARGV[4] ~= '' then
  redis.call('HSET', KEYS[2], 'nonce', nonce, 'attempts', '[]', 'tx', ARGV[4])
else
  redis.call('HSET', KEYS[2], 'nonce', nonce, 'attempts', '[]')
end
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[3], nonce, ARGV[1])
return nonce
`)

/**
 * Stores a job's signed attempts. A record the allocation made (with an empty attempt list, and its
 * expiry) keeps the expiry it has, so the usual case is one command; a record without the field (a
 * filler's, or one gone meanwhile) gets the expiry here, so no job record is ever kept for good
 * (issue 20: Redis commands per request). A script rather than MULTI/EXEC: ioredis sends a
 * transaction as a write of its own, while scripts join the auto-pipelined write of the tick, with
 * the nonce allocations and attempts of the other jobs signed in the same batch.
 */
const STORE_ATTEMPTS = luaScript(`
if redis.call('HSET', KEYS[1], 'attempts', ARGV[1]) == 1 then
  redis.call('EXPIRE', KEYS[1], ARGV[2])
end
`)

/**
 * Hands a nonce to a filler transaction, once. With an owner (the job that held the nonce and whose
 * transaction can never be mined), only while that job still holds it: its record goes, so a retry
 * of the job starts over with a new nonce. A second claim of the same nonce (another process saw the
 * same hole) finds the owner gone or the filler there, and gets 0.
 */
const CLAIM_FOR_FILLER = luaScript(`
local nonce = tonumber(ARGV[2])
if ARGV[3] ~= '' then
  local held = redis.call('ZSCORE', KEYS[1], ARGV[3])
  if not held or tonumber(held) ~= nonce then return 0 end
  redis.call('ZREM', KEYS[1], ARGV[3])
  redis.call('DEL', KEYS[3])
end
if redis.call('ZADD', KEYS[1], 'NX', nonce, ARGV[1]) == 0 then return 0 end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'nonce', nonce)
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1
`)

/** Per-key transaction state in Redis: the nonce counter, each job's nonce and signed attempts. */
export class TxStore {
  constructor(
    private readonly redis: Redis,
    private readonly base: string,
    private readonly ttlSeconds = 7 * 24 * 3600,
  ) {}

  private nonceKey = () => `${this.base}:nonce`
  private inflightKey = () => `${this.base}:inflight`
  private jobKey = (jobId: string) => `${this.base}:job:${jobId}`
  private leaseKey = () => `${this.base}:leases`

  async load(jobId: string): Promise<TxJobState> {
    const fields = await this.redis.hgetall(this.jobKey(jobId))
    const attempts = fields.attempts
      ? z.array(attemptSchema).parse(JSON.parse(fields.attempts))
      : []
    return {
      nonce: fields.nonce === undefined ? undefined : Number(fields.nonce),
      attempts,
      ...(fields.tx ? { tx: JSON.parse(fields.tx) as unknown } : {}),
      ...(fields.failed ? { failed: fields.failed } : {}),
    }
  }

  /**
   * The job's nonce: the one it holds, or the key's next. With `tx` (a job no queue holds), the
   * unsigned transaction is stored beside the nonce, so a restart can sign it if a crash came between
   * the allocation and the signature. When the key's counter is gone, the next is `fallbackNext`, and
   * without one nothing is allocated (undefined).
   */
  async allocateNonce(
    jobId: string,
    fallbackNext: number | undefined,
    tx?: unknown,
  ): Promise<number | undefined> {
    const nonce = Number(
      await ALLOCATE_NONCE.run(
        this.redis,
        [this.nonceKey(), this.jobKey(jobId), this.inflightKey()],
        [jobId, fallbackNext ?? '', this.ttlSeconds, tx === undefined ? '' : JSON.stringify(tx)],
      ),
    )
    return nonce < 0 ? undefined : nonce
  }

  /** Keeps the jobs live until `untilMs` for other processes, and drops leases that ran out. */
  async renewLeases(jobIds: readonly string[], untilMs: number, nowMs: number): Promise<void> {
    const pipeline = this.redis.pipeline().zremrangebyscore(this.leaseKey(), '-inf', nowMs)
    if (jobIds.length > 0)
      pipeline.zadd(this.leaseKey(), ...jobIds.flatMap((jobId) => [untilMs, jobId]))
    await pipeline.exec()
  }

  /** A job some process works on now (its lease has not run out). */
  async isLeased(jobId: string, nowMs: number): Promise<boolean> {
    const until = await this.redis.zscore(this.leaseKey(), jobId)
    return until !== null && Number(until) > nowMs
  }

  async releaseLease(jobId: string): Promise<void> {
    await this.redis.zrem(this.leaseKey(), jobId)
  }

  /** Records that the job failed for good (a first submission joins that failure; a resubmit clears it). */
  async markFailed(jobId: string, reason: string): Promise<void> {
    await this.redis
      .pipeline()
      .hset(this.jobKey(jobId), 'failed', reason)
      .expire(this.jobKey(jobId), this.ttlSeconds)
      .zrem(this.leaseKey(), jobId)
      .exec()
  }

  async clearFailed(jobId: string): Promise<void> {
    await this.redis.hdel(this.jobKey(jobId), 'failed')
  }

  /** Records a signed attempt; called before it is broadcast, so a crash can only lead to a rebroadcast. */
  async addAttempt(jobId: string, attempts: readonly TxAttempt[]): Promise<void> {
    await STORE_ATTEMPTS.run(
      this.redis,
      [this.jobKey(jobId)],
      [JSON.stringify(attempts), this.ttlSeconds],
    )
  }

  /** The job's transaction is final: it no longer blocks anything. */
  async settle(jobId: string): Promise<void> {
    await this.redis.zrem(this.inflightKey(), jobId)
  }

  /** Forgets a job's nonce after another transaction took it (so a retry allocates a new one). */
  async forget(jobId: string): Promise<void> {
    await this.redis.multi().del(this.jobKey(jobId)).zrem(this.inflightKey(), jobId).exec()
  }

  /** Gives `nonce` to the filler `fillerId` (see CLAIM_FOR_FILLER); false when it is not to be had. */
  async claimForFiller(fillerId: string, nonce: number, ownerJobId?: string): Promise<boolean> {
    const keys = [this.inflightKey(), this.jobKey(fillerId), this.jobKey(ownerJobId ?? fillerId)]
    return (
      Number(
        await CLAIM_FOR_FILLER.run(this.redis, keys, [
          fillerId,
          nonce,
          ownerJobId ?? '',
          this.ttlSeconds,
        ]),
      ) === 1
    )
  }

  async setNextNonce(next: number): Promise<void> {
    await this.redis.set(this.nonceKey(), next)
  }

  async nextNonce(): Promise<number | undefined> {
    const value = await this.redis.get(this.nonceKey())
    return value === null ? undefined : Number(value)
  }

  /** Jobs holding a nonce whose transaction is not final yet, lowest nonce first (within the bounds, both included). */
  async inflight(
    fromNonce = 0,
    toNonce = Number.POSITIVE_INFINITY,
  ): Promise<Array<{ jobId: string; nonce: number }>> {
    const flat = await this.redis.zrangebyscore(
      this.inflightKey(),
      fromNonce,
      Number.isFinite(toNonce) ? toNonce : '+inf',
      'WITHSCORES',
    )
    const entries: Array<{ jobId: string; nonce: number }> = []
    for (let i = 0; i < flat.length; i += 2)
      entries.push({ jobId: flat[i] as string, nonce: Number(flat[i + 1]) })
    return entries
  }
}
