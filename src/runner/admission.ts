import { formatUnits, getAddress } from 'ethers'
import type { OracleRequestEvent } from '../chain/operator.ts'
import { FeedrunnerError, type ErrorKind } from '../config/errors.ts'
import type { JobSpecFields } from '../pipeline/index.ts'
import { luaScript } from '../queue/lua-script.ts'
import type { Redis } from 'ioredis'

/** Why a request is refused: the metric's reason class reads `code`, never the words. */
export type RefusalCode =
  | 'unknown_job'
  | 'requester_not_allowed'
  | 'payment_too_low'
  | 'requester_busy'
  | 'requester_rate_limited'
  | 'expired'

const REFUSAL_KINDS: Record<RefusalCode, ErrorKind> = {
  unknown_job: 'bad_input',
  requester_not_allowed: 'not_authorised',
  payment_too_low: 'bad_input',
  requester_busy: 'not_authorised',
  requester_rate_limited: 'not_authorised',
  expired: 'bad_input',
}

/** A request the runner will not run; recorded with its message, never dropped silently. */
export class RequestRefusedError extends FeedrunnerError {
  override readonly name = 'RequestRefusedError'
  constructor(
    readonly code: RefusalCode,
    message: string,
  ) {
    super(message, { kind: REFUSAL_KINDS[code] })
  }
}

/** The refusal of a request past its cancelExpiration. */
export function expiredRefusal(cancelExpiration: bigint): RequestRefusedError {
  const at = new Date(Number(cancelExpiration) * 1_000).toISOString()
  return new RequestRefusedError(
    'expired',
    `the request passed its cancelExpiration at ${at}: its requester may cancel it and take its payment back, so it is not run`,
  )
}

/** A Chainlink node's MinContractPayment: 0.00001 LINK (MIN_CONTRACT_PAYMENT_LINK_JUELS's default). */
export const DEFAULT_MIN_CONTRACT_PAYMENT_JUELS = 10n ** 13n

/**
 * Why a request must not run, per the job's `requesters` and `minContractPaymentLinkJuels`, or
 * undefined when it may. The runner's jobs carry their chain's minimum when they set none
 * (job-registry.ts withChainDefaults: MIN_CONTRACT_PAYMENT_LINK_JUELS, default
 * DEFAULT_MIN_CONTRACT_PAYMENT_JUELS).
 */
export function refusalOf(
  spec: Pick<JobSpecFields, 'requesters' | 'minContractPaymentLinkJuels'>,
  request: OracleRequestEvent,
): RequestRefusedError | undefined {
  if (spec.requesters && spec.requesters.length > 0) {
    const requester = getAddress(request.requester)
    if (!spec.requesters.some((allowed) => getAddress(allowed) === requester)) {
      return new RequestRefusedError(
        'requester_not_allowed',
        `requester ${requester} is not in the job's requesters`,
      )
    }
  }
  const minimum = spec.minContractPaymentLinkJuels
  if (minimum !== undefined && request.payment < minimum) {
    return new RequestRefusedError(
      'payment_too_low',
      `payment ${formatUnits(request.payment, 18)} LINK is below the job's minimum of ${formatUnits(minimum, 18)} LINK (its minContractPaymentLinkJuels, else MIN_CONTRACT_PAYMENT_LINK_JUELS)`,
    )
  }
  return undefined
}

/** Per-requester bounds shared by every runner process on one Redis; 0 turns a bound off (the dev stack's default). */
export interface RequesterLimits {
  /** REQUESTER_MAX_CONCURRENT_RUNS */
  maxConcurrentRuns: number
  /** REQUESTER_MAX_REQUESTS_PER_MINUTE */
  maxRequestsPerMinute: number
}

export type Admission =
  | { ok: true; release: () => void }
  | { ok: false; reason: string; reasonClass: 'requester_busy' | 'requester_rate_limited' }

export interface RequesterAdmissionOptions {
  redis: Redis
  /** Key prefix (the runner's, hash-tagged: both keys of a requester share one cluster slot). */
  prefix: string
  /**
   * The chain whose requests are admitted. Each chain counts its own: its runs hold its keys' slots
   * and its requesters pay on it, so a requester busy on one chain is not refused on another.
   */
  chainId: number
  /** A run's slot is held this long past its last renewal: a crashed process's slots free themselves. */
  leaseMs?: number
  now?: () => number
}

const MINUTE_MS = 60_000

/**
 * Takes a slot for a run atomically: drops expired leases and starts older than a minute, refuses
 * at either bound (a run that holds a slot already, a redelivery, is not counted twice), else records
 * the run's start and its lease. Answers {0} admitted, {1, n} busy, {2, n} rate limited.
 */
const admitScript = luaScript(`
local now, maxRuns, maxPerMinute = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local runId, leaseMs = ARGV[4], tonumber(ARGV[5])
if maxRuns > 0 and not redis.call('ZSCORE', KEYS[1], runId) then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  local running = redis.call('ZCARD', KEYS[1])
  if running >= maxRuns then return {1, running} end
end
if maxPerMinute > 0 and not redis.call('ZSCORE', KEYS[2], runId) then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - ${MINUTE_MS})
  local started = redis.call('ZCARD', KEYS[2])
  if started >= maxPerMinute then return {2, started} end
  redis.call('ZADD', KEYS[2], now, runId)
  redis.call('PEXPIRE', KEYS[2], ${MINUTE_MS})
end
if maxRuns > 0 then
  redis.call('ZADD', KEYS[1], now + leaseMs, runId)
  redis.call('PEXPIRE', KEYS[1], leaseMs)
end
return {0, 0}
`)

/** Extends a live run's lease (and its key's life); a slot already taken back stays given up. */
const renewScript = luaScript(`
if redis.call('ZADD', KEYS[1], 'XX', 'CH', ARGV[1], ARGV[2]) == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 0
`)

/**
 * Per-requester admission: anyone who pays a job's minimum fee picks the request's parameters, so one
 * requester must not take every slot of the runner (issue 23). Counts runs in progress (leased, renewed
 * while they run) and requests started in the last minute (a sliding window) per requester address and
 * chain, in Redis, so the bounds hold across every runner process of the deployment, not per process.
 */
export class RequesterAdmission {
  private readonly leaseMs: number
  private readonly now: () => number

  constructor(
    private readonly limits: RequesterLimits,
    private readonly options: RequesterAdmissionOptions,
  ) {
    this.leaseMs = options.leaseMs ?? 30_000
    this.now = options.now ?? Date.now
  }

  /** Admits run `runId` of `requester`, or says why not; `release` when the run ends (once). */
  async admit(requester: string, runId: string): Promise<Admission> {
    const { maxConcurrentRuns, maxRequestsPerMinute } = this.limits
    if (maxConcurrentRuns <= 0 && maxRequestsPerMinute <= 0) return { ok: true, release: () => {} }
    const runsKey = this.key(requester, 'runs')
    const [verdict, count] = (await admitScript.run(
      this.options.redis,
      [runsKey, this.key(requester, 'started')],
      [this.now(), maxConcurrentRuns, maxRequestsPerMinute, runId, this.leaseMs],
    )) as [number, number]
    if (verdict === 1)
      return {
        ok: false,
        reasonClass: 'requester_busy',
        reason: `requester ${requester} has ${count} runs in progress on chain ${this.options.chainId}, the most REQUESTER_MAX_CONCURRENT_RUNS (${maxConcurrentRuns}) allows`,
      }
    if (verdict === 2)
      return {
        ok: false,
        reasonClass: 'requester_rate_limited',
        reason: `requester ${requester} started ${count} requests on chain ${this.options.chainId} in the last minute, the most REQUESTER_MAX_REQUESTS_PER_MINUTE (${maxRequestsPerMinute}) allows`,
      }
    if (maxConcurrentRuns <= 0) return { ok: true, release: () => {} }
    return { ok: true, release: this.holdSlot(runsKey, runId) }
  }

  /** Renews the run's lease until released; the release gives the slot back at once. */
  private holdSlot(runsKey: string, runId: string): () => void {
    const { redis } = this.options
    // A failed renewal or release costs at most one lease of a slot: the lease frees it anyway.
    const renew = setInterval(() => {
      void renewScript
        .run(redis, [runsKey], [this.now() + this.leaseMs, runId, this.leaseMs])
        .catch(() => undefined)
    }, this.leaseMs / 3)
    renew.unref()
    let released = false
    return () => {
      if (released) return
      released = true
      clearInterval(renew)
      void redis.zrem(runsKey, runId).catch(() => undefined)
    }
  }

  private key(requester: string, what: 'runs' | 'started'): string {
    return `${this.options.prefix}:requester:${this.options.chainId}:${requester.toLowerCase()}:${what}`
  }
}

/** The words of refusalOf, or undefined when the request may run. */
export function refusalReason(
  spec: Pick<JobSpecFields, 'requesters' | 'minContractPaymentLinkJuels'>,
  request: OracleRequestEvent,
): string | undefined {
  return refusalOf(spec, request)?.message
}
