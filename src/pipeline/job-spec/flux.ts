import { parse as parseToml, TomlError } from 'smol-toml'
import { parseDuration } from '../duration.ts'
import { deriveExternalJobID } from './external-job-id.ts'
import { keyLine } from './fields.ts'
import { FLUX_FIELD_PURPOSE, fluxSpecFields, type FluxSpecFields } from './flux-schema.ts'
import { buildTasks, observationSourceLine, type PipelineJob } from './loader.ts'
import type { SpecProblem } from './problems.ts'
import type { PipelineTask } from './schema.ts'

/** A validated `fluxmonitor` spec: its fields, with timers in milliseconds, and its pipeline. */
export interface FluxJob extends PipelineJob {
  file: string
  spec: Omit<FluxSpecFields, 'externalJobID'> & { externalJobID: string }
  externalJobIDDerived: boolean
  /** Undefined when the timer is disabled. */
  pollTimerMs?: number
  idleTimerMs?: number
  tasks: PipelineTask[]
  terminal: string[]
}

/** Chainlink's default HTTP timeout: a poll shorter than what a fetch may take is refused, as there. */
const DEFAULT_HTTP_TIMEOUT_MS = 15_000

/** Reads and validates a `fluxmonitor` spec; every problem, never only the first. */
export function loadFluxSpec(
  text: string,
  file: string,
): { job?: FluxJob; problems: SpecProblem[] } {
  let document: Record<string, unknown>
  try {
    document = parseToml(text) as Record<string, unknown>
  } catch (error) {
    const line = error instanceof TomlError ? error.line : undefined
    return {
      problems: [
        { file, line, message: `not valid TOML: ${(error as Error).message.split('\n')[0]}` },
      ],
    }
  }
  const problems: SpecProblem[] = []
  const parsed = fluxSpecFields.safeParse(document)
  if (!parsed.success)
    for (const issue of parsed.error.issues)
      problems.push(fieldProblem(issue, document, text, file))
  const source = document.observationSource
  const tasks =
    typeof source === 'string'
      ? buildTasks(source, observationSourceLine(text), file, problems)
      : undefined
  if (!parsed.success || tasks === undefined || problems.length > 0) return { problems }
  const fields = parsed.data
  const at = (field: string, message: string) =>
    problems.push({ file, line: keyLine(text, field), field, message })
  if (tasks.terminal.length !== 1)
    at(
      'observationSource',
      `the pipeline must end in one task, whose result is the value submitted; it ends in ${tasks.terminal.length} (${tasks.terminal.join(', ')})`,
    )
  const timers = checkTimers(fields, tasks.ordered, at)
  if (problems.length > 0) return { problems }
  const job: FluxJob = {
    file,
    spec: {
      ...fields,
      externalJobID: fields.externalJobID ?? deriveExternalJobID(fields.name, file),
    },
    externalJobIDDerived: fields.externalJobID === undefined,
    ...timers,
    tasks: tasks.ordered,
    terminal: tasks.terminal,
  }
  return { job, problems }
}

/** The poll and idle timers as Chainlink checks them: each needed unless disabled, a poll no shorter than a fetch. */
function checkTimers(
  fields: FluxSpecFields,
  tasks: readonly PipelineTask[],
  at: (field: string, message: string) => void,
): { pollTimerMs?: number; idleTimerMs?: number } {
  const timers: { pollTimerMs?: number; idleTimerMs?: number } = {}
  if (fields.drumbeatEnabled)
    at(
      'drumbeatEnabled',
      'drumbeatEnabled = true: feedrunner does not run the drumbeat yet; use idleTimerPeriod for the heartbeat',
    )
  if (!fields.pollTimerDisabled) {
    if (fields.pollTimerPeriod === undefined)
      at(
        'pollTimerPeriod',
        `pollTimerPeriod is required unless pollTimerDisabled = true: ${FLUX_FIELD_PURPOSE.pollTimerPeriod}`,
      )
    else {
      const poll = parseDuration(fields.pollTimerPeriod) as number
      const least = leastFetchTimeout(fields, tasks)
      if (poll < least)
        at(
          'pollTimerPeriod',
          `pollTimerPeriod ${fields.pollTimerPeriod} is shorter than a fetch may take (${least / 1000}s: the least of 15s, maxTaskDuration and the tasks' timeouts): poll less often, or give the tasks a shorter timeout`,
        )
      timers.pollTimerMs = poll
    }
  }
  if (!fields.idleTimerDisabled) {
    const idle =
      fields.idleTimerPeriod === undefined ? undefined : parseDuration(fields.idleTimerPeriod)
    if (idle === undefined || idle <= 0)
      at(
        'idleTimerPeriod',
        `idleTimerPeriod is required unless idleTimerDisabled = true: ${FLUX_FIELD_PURPOSE.idleTimerPeriod}`,
      )
    else timers.idleTimerMs = idle
  }
  if (fields.pollTimerDisabled && fields.idleTimerDisabled && !fields.drumbeatEnabled)
    at(
      'pollTimerDisabled',
      'pollTimerDisabled and idleTimerDisabled are both true: this node would only ever answer rounds others start; enable one of them',
    )
  return timers
}

function leastFetchTimeout(fields: FluxSpecFields, tasks: readonly PipelineTask[]): number {
  const candidates = [DEFAULT_HTTP_TIMEOUT_MS]
  const spec =
    fields.maxTaskDuration === undefined ? 0 : (parseDuration(fields.maxTaskDuration) ?? 0)
  if (spec > 0) candidates.push(spec)
  for (const task of tasks) {
    const timeout =
      task.attributes.timeout === undefined ? undefined : parseDuration(task.attributes.timeout)
    if (timeout !== undefined && timeout > 0) candidates.push(timeout)
  }
  return Math.min(...candidates)
}

function fieldProblem(
  issue: { code: string; path: PropertyKey[]; message: string; keys?: string[] },
  document: Record<string, unknown>,
  text: string,
  file: string,
): SpecProblem {
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys ?? []
    return {
      file,
      line: keyLine(text, keys[0] ?? ''),
      field: keys[0],
      message: `unknown field${keys.length > 1 ? 's' : ''} ${keys.join(', ')}: a fluxmonitor spec takes ${Object.keys(fluxSpecFields.shape).join(', ')}`,
    }
  }
  const field = String(issue.path[0] ?? '')
  const value = document[field]
  const message =
    value === undefined
      ? `${field} is required: ${FLUX_FIELD_PURPOSE[field] ?? field}`
      : `${field} ${issue.message}, got ${JSON.stringify(value)}`
  return { file, line: keyLine(text, field), field, message }
}
