import type { History } from './history.ts'
import type { RequestPlan, Schedule } from './schedule.ts'

/** The reason words of each admission refusal, as the runner records them (src/runner/admission.ts). */
const REFUSALS = [
  ['busy', 'REQUESTER_MAX_CONCURRENT_RUNS'],
  ['rate limited', 'REQUESTER_MAX_REQUESTS_PER_MINUTE'],
] as const

/** The plan of each request the harness makes, by purpose (`request:3`, `storm:1`). */
export function plansByPurpose(schedule: Schedule): Map<string, RequestPlan> {
  const plans = new Map<string, RequestPlan>()
  schedule.requests.forEach((plan, index) => plans.set(`request:${index}`, plan))
  for (const fault of schedule.faults)
    if (fault.kind === 'cancel-storm')
      fault.requests.forEach((plan, index) => plans.set(`storm:${index}`, plan))
  return plans
}

/** The schedule's requesters and bounds, one line. */
export function describeAdmission(schedule: Schedule): string {
  const made = new Array<number>(schedule.requesters).fill(0)
  for (const plan of plansByPurpose(schedule).values()) made[plan.requester]! += 1
  const { maxConcurrentRuns, maxRequestsPerMinute } = schedule.admission
  return `  requesters: ${schedule.requesters} consumers making ${made.join(', ')} requests; REQUESTER_MAX_CONCURRENT_RUNS ${maxConcurrentRuns}, REQUESTER_MAX_REQUESTS_PER_MINUTE ${maxRequestsPerMinute}`
}

/** How many requests of each requester the runners refused at a bound, one line. */
export function describeAdmissionOutcome(schedule: Schedule, history: History): string {
  const plans = plansByPurpose(schedule)
  const refused = Array.from({ length: schedule.requesters }, () => [0, 0])
  for (const request of history.requests) {
    const plan = request.purpose === undefined ? undefined : plans.get(request.purpose)
    const reason = history.runs.get(request.requestId)?.reason ?? ''
    if (!plan || history.runs.get(request.requestId)?.state !== 'refused') continue
    REFUSALS.forEach(([, setting], index) => {
      if (reason.includes(setting)) refused[plan.requester]![index]! += 1
    })
  }
  const each = refused.map(
    (counts, requester) =>
      `requester ${requester} ${REFUSALS.map(([what], index) => `${counts[index]} ${what}`).join(', ')}`,
  )
  return `  admission refused: ${each.join('; ')}`
}
