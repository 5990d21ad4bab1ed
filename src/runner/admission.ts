import { formatUnits, getAddress } from 'ethers'
import type { OracleRequestEvent } from '../chain/operator.ts'
import { FeedrunnerError, type ErrorKind } from '../config/errors.ts'
import type { SpecOf } from '../pipeline/index.ts'
import { luaScriptFile } from '../queue/lua-script.ts'
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
    override readonly code: RefusalCode,
    message: string,
  ) {
    super(message, { kind: REFUSAL_KINDS[code], code })
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
  spec: Pick<SpecOf<'directrequest'>, 'requesters' | 'minContractPaymentLinkJuels'>,
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
  /** The window REQUESTER_MAX_REQUESTS_PER_MINUTE counts over: a minute (a test may shorten it). */
  windowMs?: number
}

const MINUTE_MS = 60_000

const ADMIT = luaScriptFile(new URL('./requester-admit.lua', import.meta.url), {
  keys: ['runs', 'started'],
  args: ['max_runs', 'max_per_window', 'run_id', 'lease_ms', 'window_ms'],
})
const RENEW = luaScriptFile(new URL('./requester-renew.lua', import.meta.url), {
  keys: ['runs'],
  args: ['run_id', 'lease_ms'],
})

/**
 * Per-requester admission: anyone who pays a job's minimum fee picks the request's parameters, so one
 * requester must not take every slot of the runner. Counts runs in progress (leased, renewed while
 * they run) and requests started in the last minute (a sliding window) per requester address and
 * chain, in Redis, so the bounds hold across every runner process of the deployment, not per process.
 * Leases end and starts leave the window by Redis's clock, read in the scripts: runner hosts whose
 * clocks disagree by minutes still count the same runs and free a dead process's slots on time.
 */
export class RequesterAdmission {
  private readonly leaseMs: number
  private readonly windowMs: number

  constructor(
    private readonly limits: RequesterLimits,
    private readonly options: RequesterAdmissionOptions,
  ) {
    this.leaseMs = options.leaseMs ?? 30_000
    this.windowMs = options.windowMs ?? MINUTE_MS
  }

  /** Admits run `runId` of `requester`, or says why not; `release` when the run ends (once). */
  async admit(requester: string, runId: string): Promise<Admission> {
    const { maxConcurrentRuns, maxRequestsPerMinute } = this.limits
    if (maxConcurrentRuns <= 0 && maxRequestsPerMinute <= 0) return { ok: true, release: () => {} }
    const runsKey = this.key(requester, 'runs')
    const [verdict, count] = (await ADMIT.run(
      this.options.redis,
      { runs: runsKey, started: this.key(requester, 'started') },
      {
        max_runs: maxConcurrentRuns,
        max_per_window: maxRequestsPerMinute,
        run_id: runId,
        lease_ms: this.leaseMs,
        window_ms: this.windowMs,
      },
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
      void RENEW.run(redis, { runs: runsKey }, { run_id: runId, lease_ms: this.leaseMs }).catch(
        () => undefined,
      )
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
