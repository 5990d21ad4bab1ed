import { formatUnits, getAddress } from 'ethers'
import type { OracleRequestEvent } from '../chain/operator.ts'
import { FeedrunnerError, type ErrorKind } from '../config/errors.ts'
import type { JobSpecFields } from '../pipeline/index.ts'

/** Why a request is refused: the metric's reason class reads `code`, never the words. */
export type RefusalCode =
  | 'unknown_job'
  | 'requester_not_allowed'
  | 'payment_too_low'
  | 'requester_busy'
  | 'requester_rate_limited'

const REFUSAL_KINDS: Record<RefusalCode, ErrorKind> = {
  unknown_job: 'bad_input',
  requester_not_allowed: 'not_authorised',
  payment_too_low: 'bad_input',
  requester_busy: 'not_authorised',
  requester_rate_limited: 'not_authorised',
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

/**
 * Why a request must not run, per the job's `requesters` and `minContractPaymentLinkJuels`, or
 * undefined when it may.
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
      `payment ${formatUnits(request.payment, 18)} LINK is below the job's minimum of ${formatUnits(minimum, 18)} LINK`,
    )
  }
  return undefined
}

/** Per-requester bounds of one runner process; 0 turns a bound off (the dev stack's default). */
export interface RequesterLimits {
  /** REQUESTER_MAX_CONCURRENT_RUNS */
  maxConcurrentRuns: number
  /** REQUESTER_MAX_REQUESTS_PER_MINUTE */
  maxRequestsPerMinute: number
}

export type Admission =
  | { ok: true; release: () => void }
  | { ok: false; reason: string; reasonClass: 'requester_busy' | 'requester_rate_limited' }

const MINUTE_MS = 60_000

/**
 * Per-requester admission: anyone who pays a job's minimum fee picks the request's parameters, so one
 * requester must not take every slot of the runner (issue 23). Counts runs in progress and requests
 * started in the last minute (a sliding window) per requester address, in this process.
 */
export class RequesterAdmission {
  private readonly running = new Map<string, number>()
  private readonly started = new Map<string, number[]>()

  constructor(
    private readonly limits: RequesterLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** Admits one run of `requester`, or says why not; `release` when the run ends (once). */
  admit(requester: string): Admission {
    const who = requester.toLowerCase()
    const { maxConcurrentRuns, maxRequestsPerMinute } = this.limits
    const running = this.running.get(who) ?? 0
    if (maxConcurrentRuns > 0 && running >= maxConcurrentRuns)
      return {
        ok: false,
        reasonClass: 'requester_busy',
        reason: `requester ${requester} has ${running} runs in progress, the most REQUESTER_MAX_CONCURRENT_RUNS (${maxConcurrentRuns}) allows`,
      }
    if (maxRequestsPerMinute > 0) {
      const now = this.now()
      const recent = (this.started.get(who) ?? []).filter((at) => at > now - MINUTE_MS)
      if (recent.length >= maxRequestsPerMinute) {
        this.started.set(who, recent)
        return {
          ok: false,
          reasonClass: 'requester_rate_limited',
          reason: `requester ${requester} started ${recent.length} requests in the last minute, the most REQUESTER_MAX_REQUESTS_PER_MINUTE (${maxRequestsPerMinute}) allows`,
        }
      }
      recent.push(now)
      this.started.set(who, recent)
    }
    this.running.set(who, running + 1)
    let released = false
    return {
      ok: true,
      release: () => {
        if (released) return
        released = true
        const left = (this.running.get(who) ?? 1) - 1
        if (left > 0) this.running.set(who, left)
        else this.running.delete(who)
        this.forgetIdle()
      },
    }
  }

  /** Drops windows with nothing in the last minute, so the maps stay as small as the active requesters. */
  private forgetIdle(): void {
    if (this.started.size < 1_024) return
    const since = this.now() - MINUTE_MS
    for (const [who, times] of this.started)
      if (!this.running.has(who) && (times.at(-1) ?? 0) <= since) this.started.delete(who)
  }
}

/** The words of refusalOf, or undefined when the request may run. */
export function refusalReason(
  spec: Pick<JobSpecFields, 'requesters' | 'minContractPaymentLinkJuels'>,
  request: OracleRequestEvent,
): string | undefined {
  return refusalOf(spec, request)?.message
}
