import type { Redis } from 'ioredis'
import { luaScript } from '../../queue/lua-script.ts'

/**
 * Requests held by runner processes themselves (issue 20: the `requests` BullMQ job cost 34-51 Redis
 * commands a request; a lease costs about 7). Two keys per chain, both under
 * `<prefix>:runner:direct:<chain id>` so they share the prefix's hash tag (Redis Cluster):
 *
 * - `leases`, a sorted set: member = the request's job id (`requestJobId`), score = when the lease
 *   expires (epoch ms), or, for a run waiting to be tried again, when it may be (its not-before time);
 * - `held`, a hash: job id -> `<owner>|<attempts made>|<request payload JSON>`. The owner is the token
 *   of one claim (`<process>:<n>`); it is empty while the run waits for another try or was handed
 *   back, so any process may take it. The payload is what another process needs to take the run over.
 *
 * Every operation is one script, so two processes never both hold a lease. A lease whose expiry passed
 * (its process died or stalls) is taken over by whichever process sweeps first, as BullMQ's stalled
 * check took a job over; the sender's stored attempt keeps a second run from sending twice.
 */
export interface HeldLease {
  jobId: string
  /** This claim's owner token: only it may renew, finish or hand back the lease. */
  token: string
  attemptsMade: number
  /** The request payload (JSON of `RequestPayload`). */
  payload: string
  /** Taken over from a process whose lease expired: its run may have sent already. */
  stalled: boolean
}

export interface LeaseCounts {
  /** Leases a process holds (running or about to). */
  held: number
  /** Runs waiting for another try, or handed back and not taken yet. */
  waiting: number
}

/** `owner|attempts|payload`, read in Lua by its first two fields only (the payload stays a string). */
const PARSE = `
local function parse(value)
  if not value then return nil end
  local owner, attempts, payload = string.match(value, '^([^|]*)|(%d+)|(.*)$')
  return owner, attempts, payload
end
`

/** Claims a request: answers 1 when it was free (now ours), 0 when some process has it already. */
const CLAIM = luaScript(`
if redis.call('ZADD', KEYS[1], 'NX', ARGV[3], ARGV[1]) == 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2] .. '|0|' .. ARGV[4])
return 1
`)

/**
 * Extends every lease of ARGV[2..] (job id, token pairs) to ARGV[1], in three commands however many:
 * answers the job ids no longer ours (taken over, finished elsewhere, or gone with Redis's state).
 */
const RENEW = luaScript(`${PARSE}
local ids = {}
for i = 2, #ARGV, 2 do ids[#ids + 1] = ARGV[i] end
local values = redis.call('HMGET', KEYS[2], unpack(ids))
local renew, lost = {}, {}
for i, id in ipairs(ids) do
  local owner = parse(values[i])
  if owner == ARGV[2 * i + 1] then
    renew[#renew + 1] = ARGV[1]
    renew[#renew + 1] = id
  else
    lost[#lost + 1] = id
  end
end
if #renew > 0 then redis.call('ZADD', KEYS[1], 'XX', unpack(renew)) end
return lost
`)

/**
 * Takes at most ARGV[4] leases due at ARGV[1] (expired, or waiting runs whose time came): each gets a
 * token ARGV[2]..'#'..n and expires at ARGV[3]. Answers, per lease: job id, token, attempts made,
 * payload, and '1' when it was taken from an owner (stalled) or '0' when it waited for anyone.
 */
const TAKE = luaScript(`${PARSE}
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[4]))
local taken = {}
for n, id in ipairs(due) do
  local owner, attempts, payload = parse(redis.call('HGET', KEYS[2], id))
  if not owner then
    redis.call('ZREM', KEYS[1], id)
  else
    local token = ARGV[2] .. '#' .. n
    redis.call('ZADD', KEYS[1], ARGV[3], id)
    redis.call('HSET', KEYS[2], id, token .. '|' .. attempts .. '|' .. payload)
    taken[#taken + 1] = { id, token, attempts, payload, owner == '' and '0' or '1' }
  end
end
return taken
`)

/** Removes a lease its token holds (a run that ended): 1 when removed, 0 when not ours any more. */
const FINISH = luaScript(`${PARSE}
if parse(redis.call('HGET', KEYS[2], ARGV[1])) ~= ARGV[2] then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
`)

/**
 * Puts a run back for anyone to take at ARGV[3] with ARGV[4] attempts made (a retry after a transient
 * failure, or a hand-back on shutdown). Also when the lease is gone altogether (Redis lost its state
 * while the run went on): the run must still end somewhere. Not when another process holds it now.
 */
const PUT_BACK = luaScript(`${PARSE}
local owner = parse(redis.call('HGET', KEYS[2], ARGV[1]))
if owner and owner ~= ARGV[2] then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], '|' .. ARGV[4] .. '|' .. ARGV[5])
return 1
`)

/** Removes a run that waits for anyone (a cancelled request's retry): 1 when removed. */
const DROP_WAITING = luaScript(`${PARSE}
if parse(redis.call('HGET', KEYS[2], ARGV[1])) ~= '' then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
`)

/** ZADD takes this many pairs at once in RENEW (Lua's unpack has a bounded stack). */
const RENEW_BATCH = 1_000

export class LeaseStore {
  private readonly keys: [string, string]

  constructor(
    private readonly redis: Redis,
    prefix: string,
    chainId: number,
  ) {
    this.keys = leaseKeys(prefix, chainId)
  }

  /** Claims `jobId` until `expiresAt`: true when it was free and is now held by `token`. */
  async claim(jobId: string, token: string, expiresAt: number, payload: string): Promise<boolean> {
    return (await CLAIM.run(this.redis, this.keys, [jobId, token, expiresAt, payload])) === 1
  }

  /** Extends the given leases to `expiresAt`; answers the job ids that are not ours any more. */
  async renew(
    leases: ReadonlyArray<{ jobId: string; token: string }>,
    expiresAt: number,
  ): Promise<string[]> {
    const lost: string[] = []
    for (let at = 0; at < leases.length; at += RENEW_BATCH) {
      const args = [
        expiresAt,
        ...leases.slice(at, at + RENEW_BATCH).flatMap((l) => [l.jobId, l.token]),
      ]
      lost.push(...((await RENEW.run(this.redis, this.keys, args)) as string[]))
    }
    return lost
  }

  /** Whether any lease is due at `now`: one ZRANGEBYSCORE, so a sweep with nothing to do is cheap. */
  async anyDue(now: number): Promise<boolean> {
    const due = await this.redis.zrangebyscore(this.keys[0], '-inf', now, 'LIMIT', 0, 1)
    return due.length > 0
  }

  /** Takes at most `max` due leases for tokens `<tokenPrefix>#<n>`, held until `expiresAt`. */
  async take(
    now: number,
    tokenPrefix: string,
    expiresAt: number,
    max: number,
  ): Promise<HeldLease[]> {
    const taken = (await TAKE.run(this.redis, this.keys, [
      now,
      tokenPrefix,
      expiresAt,
      max,
    ])) as Array<[string, string, string, string, string]>
    return taken.map(([jobId, token, attempts, payload, stalled]) => ({
      jobId,
      token,
      attemptsMade: Number(attempts),
      payload,
      stalled: stalled === '1',
    }))
  }

  /** Removes a lease `token` holds; false when it is not ours any more. */
  async finish(jobId: string, token: string): Promise<boolean> {
    return (await FINISH.run(this.redis, this.keys, [jobId, token])) === 1
  }

  /** Puts a run back for any process from `notBefore` on; false when another process holds it now. */
  async putBack(
    lease: { jobId: string; token: string; payload: string },
    notBefore: number,
    attemptsMade: number,
  ): Promise<boolean> {
    const args = [lease.jobId, lease.token, notBefore, attemptsMade, lease.payload]
    return (await PUT_BACK.run(this.redis, this.keys, args)) === 1
  }

  /** Removes a run that waits for another try (its request was cancelled); false otherwise. */
  async dropWaiting(jobId: string): Promise<boolean> {
    return (await DROP_WAITING.run(this.redis, this.keys, [jobId])) === 1
  }

  /** How many leases are held and how many runs wait, for `status` and the metrics. */
  async counts(): Promise<LeaseCounts> {
    return countLeases(this.redis, this.keys[1])
  }
}

/** The two keys of a chain's leases: they share the prefix's hash tag, so one script may use both. */
export function leaseKeys(prefix: string, chainId: number): [string, string] {
  const base = `${prefix}:runner:direct:${chainId}`
  return [`${base}:leases`, `${base}:held`]
}

/** Counts the leases of one `held` hash by their owner field (empty: waiting for anyone). */
export async function countLeases(redis: Redis, heldKey: string): Promise<LeaseCounts> {
  const counts: LeaseCounts = { held: 0, waiting: 0 }
  let cursor = '0'
  do {
    const [next, entries] = await redis.hscan(heldKey, cursor, 'COUNT', 500)
    cursor = next
    for (let at = 1; at < entries.length; at += 2)
      if (entries[at]!.startsWith('|')) counts.waiting++
      else counts.held++
  } while (cursor !== '0')
  return counts
}
