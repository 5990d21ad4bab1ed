import { Decimal } from 'decimal.js'
import { FeedrunnerError } from '../../config/errors.ts'
import { runJob, type RunOptions } from '../../pipeline/executor.ts'
import type { FluxJob } from './flux-job.ts'

/**
 * Runs a flux job's pipeline and reads its one result as the integer to submit: the pipeline scales
 * the value itself (a `multiply`), as Chainlink's flux monitor expects, and what is left after the
 * point is dropped toward zero, as Chainlink's `answer.BigInt()` drops it. `jobRun.meta` carries the
 * aggregator's latest answer and when it was updated, as a node gives its bridges.
 */
export async function observeFluxValue(
  job: FluxJob,
  meta: Record<string, unknown>,
  options: Omit<RunOptions, 'jobRun'> = {},
): Promise<bigint> {
  const result = await runJob(job, { ...options, jobRun: { meta } })
  if (!result.ok)
    throw new FeedrunnerError(
      `the pipeline of ${job.spec.name} failed: ${result.errors.join('; ')}`,
      { kind: result.failures[0]?.kind ?? 'upstream', cause: result.failures[0] },
    )
  return integerOf(result.outputs[0], job.spec.name)
}

export function integerOf(value: unknown, jobName: string): bigint {
  if (typeof value === 'bigint') return value
  const text =
    typeof value === 'number' || typeof value === 'string'
      ? String(value)
      : value instanceof Decimal
        ? value.toString()
        : undefined
  try {
    if (text !== undefined) return BigInt(new Decimal(text.trim()).trunc().toFixed(0))
  } catch {
    // said below
  }
  throw new FeedrunnerError(
    `the pipeline of ${jobName} ended in ${JSON.stringify(String(value)).slice(0, 60)}, not a number to submit`,
    { kind: 'bad_input' },
  )
}
