import { withoutRepeats } from '../config/errors.ts'
import type { RunRecord, TaskRecord } from '../runner/run-record.ts'
import { linkAmount, replayHistory, requesterAdvice } from '../runner/run-advice.ts'
import { renderTable } from './table.ts'

/** The widest task output `runs show` prints in its table; `--json` has every output whole. */
const SHOWN_OUTPUT_CHARS = 100

/**
 * A run as `runs show` prints it. With --json: the record alone on stdout (a program reads it
 * whole), its replays and what its requester can do on stderr. Without: a readable summary, the
 * tasks as a table, then those notes.
 */
export function printRun(
  run: RunRecord,
  extra: { reconciledAt: number | undefined },
  options: { json?: boolean } = {},
): void {
  const notes = [...replayHistory(run), ...requesterAdvice(run, Math.floor(Date.now() / 1000))]
  const checkedAgainstChain = checkedSince(run, extra.reconciledAt)
  if (options.json) {
    console.log(JSON.stringify(recordShown(run, checkedAgainstChain), null, 2))
    if (notes.length > 0) console.error(notes.join('\n'))
    return
  }
  console.log(renderTable(['run', run.requestId], summaryRows(run, checkedAgainstChain)))
  const tasks = run.tasks ?? []
  const because = failedBecause(tasks)
  console.log(
    tasks.length === 0
      ? '\nno task has run yet'
      : `\n${renderTable(
          ['task', 'type', 'ms', 'output'],
          tasks.map((task) => [
            task.id,
            task.type,
            task.ms === undefined ? '' : String(task.ms),
            task.error === undefined
              ? shown(task.output)
              : because.has(task.id)
                ? `FAILED because ${because.get(task.id)} failed`
                : `FAILED: ${oneLine(task.error)}`,
          ]),
        )}`,
  )
  if (notes.length > 0) console.log(`\n${notes.join('\n')}`)
  console.log('\n(feedrunner runs show <id> --json prints the whole record)')
}

function summaryRows(run: RunRecord, checkedAgainstChain: string): string[][] {
  if (run.trigger === 'tick' || run.trigger === 'call') return pushedRows(run)
  const rows: Array<[string, string | undefined]> = [
    ['job', `${run.job} (externalJobID ${run.externalJobId})`],
    ['trigger', 'request (an OracleRequest log)'],
    ['state', run.quarantined ? `${run.state} (quarantined: not run again by itself)` : run.state],
    ['reason', run.reason],
    ['chain', String(run.chainId)],
    ['operator', run.operator],
    ['requester', run.requester],
    ['payment', `${linkAmount(BigInt(run.payment || '0'))} LINK (${run.payment} juels)`],
    ['request', `block ${run.blockNumber}, tx ${run.requestTxHash}`],
    ['fulfilment tx', run.txHash],
    ['times', timeline(run.times)],
    ['checked against the chain', checkedAgainstChain],
  ]
  return rows.filter((row): row is [string, string] => row[1] !== undefined && row[1] !== '')
}

/** A run no request started: what started it, and no request's fields. */
function pushedRows(run: RunRecord): string[][] {
  const rows: Array<[string, string | undefined]> = [
    ['job', `${run.job} (externalJobID ${run.externalJobId})`],
    [
      'trigger',
      run.trigger === 'tick'
        ? `tick ${run.tickAt === undefined ? '' : new Date(run.tickAt).toISOString()} (cron)`
        : `call by ${run.caller ?? '(unknown)'} (POST /v2/jobs/${run.externalJobId}/runs)`,
    ],
    ['state', run.quarantined ? `${run.state} (quarantined: not run again by itself)` : run.state],
    ['reason', run.reason],
    ['chain', String(run.chainId)],
    ['transaction', run.txHash],
    ['times', timeline(run.times)],
  ]
  return rows.filter((row): row is [string, string] => row[1] !== undefined && row[1] !== '')
}

/**
 * The failed tasks that failed because an earlier one did (its failure is in theirs), each with the
 * nearest such task: the chain of causes is said once, at the task where it began, and not again,
 * longer each time, on every task after it.
 */
function failedBecause(tasks: readonly TaskRecord[]): Map<string, string> {
  const because = new Map<string, string>()
  tasks.forEach((task, at) => {
    if (!task.failure) return
    const carried = new Set(withoutRepeats(task.failure).causes.map((cause) => cause.message))
    const earlier = tasks
      .slice(0, at)
      .findLast((other) => other.failure && carried.has(other.failure.message))
    if (earlier) because.set(task.id, earlier.id)
  })
  return because
}

/**
 * When the chain was last asked about this run: the reconciler's last pass, if it came after the
 * run was received (one before it said nothing of this run, and read as a time before "received").
 */
function checkedSince(run: RunRecord, reconciledAt: number | undefined): string {
  const received = Math.min(...Object.values(run.times).filter((at) => typeof at === 'number'))
  return reconciledAt !== undefined && reconciledAt >= received
    ? new Date(reconciledAt).toISOString()
    : 'not yet'
}

/** The record as --json prints it: its times in the order they came, each stored error said once. */
function recordShown(run: RunRecord, checkedAgainstChain: string): Record<string, unknown> {
  const times = Object.fromEntries(
    Object.entries(run.times).sort((a, b) => (a[1] ?? 0) - (b[1] ?? 0)),
  )
  return {
    ...run,
    ...(run.failure ? { failure: withoutRepeats(run.failure) } : {}),
    ...(run.tasks
      ? {
          tasks: run.tasks.map((task) =>
            task.failure ? { ...task, failure: withoutRepeats(task.failure) } : task,
          ),
        }
      : {}),
    times,
    checkedAgainstChain,
  }
}

/** `received 2025-01-01T10:00:00.000Z, running +3 ms, sent +180 ms, fulfilled +420 ms`. */
function timeline(times: RunRecord['times']): string {
  const entries = Object.entries(times)
    .filter((entry): entry is [string, number] => typeof entry[1] === 'number')
    .sort((a, b) => a[1] - b[1])
  const first = entries[0]?.[1]
  return entries
    .map(([state, at], index) =>
      index === 0 ? `${state} ${new Date(at).toISOString()}` : `${state} +${at - (first ?? at)} ms`,
    )
    .join(', ')
}

function shown(output: unknown): string {
  if (output === undefined) return ''
  const text = oneLine(typeof output === 'string' ? output : JSON.stringify(output))
  return text.length > SHOWN_OUTPUT_CHARS
    ? `${text.slice(0, SHOWN_OUTPUT_CHARS)}… (${text.length} chars)`
    : text
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ')
}
