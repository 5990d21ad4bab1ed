import { fulfilmentValueType } from '../dry-run.ts'
import type { Job } from './loader.ts'
import { replaceVariables, wholeVarExpression } from '../vars.ts'

/**
 * What a job asks of its requester and its bridge, read from the spec itself (for the README table,
 * `jobs list` and the checks that keep jobs/ in line with the feed catalog).
 */
export interface JobSummary {
  file: string
  name: string
  externalJobID: string
  /** Name of the first bridge task's bridge. */
  bridge?: string
  /**
   * String fields of that bridge's `data` as written (endpoint, key, ...), and a whole task's value
   * such as `$(collection)`, kept to show where the field comes from; `$(task.key)` is neither.
   */
  literals: Record<string, string>
  /** Fields filled from the request's CBOR parameters: field -> parameter name. */
  requestParams: Record<string, string>
  /** The value type delivered to the callback. */
  valueType?: string
}

const CBOR_VARIABLE = /^\$\((\w+)\.(\w+)\)$/

export function summariseJob(job: Job): JobSummary {
  const summary: JobSummary = {
    file: job.file,
    name: job.spec.name,
    externalJobID: job.spec.externalJobID,
    literals: {},
    requestParams: {},
    valueType: fulfilmentValueType(job),
  }
  const bridgeTask = job.tasks.find((task) => task.type === 'bridge')
  if (!bridgeTask) return summary
  summary.bridge = bridgeTask.attributes.name
  const cborTasks = new Set(
    job.tasks.filter((task) => task.type === 'cborparse').map((task) => task.id),
  )
  const requestDataText = bridgeTask.attributes.requestData ?? '{}'
  // Data that is one variable has no fields to show; the loader takes it even when its keypath names
  // a quoted task id (`$(req-data)`), which replaceVariables does not mark and JSON cannot parse.
  if (wholeVarExpression(requestDataText) !== undefined) return summary
  const marked = replaceVariables(requestDataText, (keypath) => JSON.stringify(`$(${keypath})`))
  const requestData = JSON.parse(marked) as { data?: Record<string, unknown> }
  for (const [field, value] of Object.entries(requestData.data ?? {})) {
    if (typeof value !== 'string') continue
    const variable = CBOR_VARIABLE.exec(value)
    if (variable && cborTasks.has(variable[1] ?? ''))
      summary.requestParams[field] = variable[2] ?? field
    else if (!variable) summary.literals[field] = value
  }
  return summary
}

/** The README's job table, one row per spec. */
export function jobTableMarkdown(summaries: readonly JobSummary[]): string {
  const rows = summaries.map((summary) => {
    const params = Object.values(summary.requestParams)
      .map((param) => `\`${param}\``)
      .join(', ')
    return `| \`${summary.file}\` | \`${summary.literals.endpoint ?? '-'}\` | ${params} | \`${summary.valueType ?? '-'}\` | \`${summary.externalJobID}\` |`
  })
  return [
    '| spec | adapter endpoint | request parameters (`req._add`) | callback value | externalJobID |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n')
}
