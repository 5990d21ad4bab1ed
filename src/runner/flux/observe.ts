import { FeedrunnerError } from '../../config/errors.ts'
import { runJob, type RunOptions } from '../../pipeline/executor.ts'
import { toDecimal, type Decimal } from '../../reduce/decimal.ts'
import type { FluxJob } from './flux-job.ts'

/**
 * Runs a flux job's pipeline and reads its one result as a decimal, as Chainlink's flux monitor
 * reads it (utils.ToDecimal): the pipeline scales the value itself (a `multiply`), and the range
 * and the deviation are checked on the decimal, before what is left after the point is dropped
 * (the monitor). `jobRun.meta` carries the aggregator's latest answer and when it was
 * updated, as a node gives its bridges.
 */
export async function observeFluxValue(
  job: FluxJob,
  meta: Record<string, unknown>,
  options: Omit<RunOptions, 'jobRun'> = {},
): Promise<Decimal> {
  const result = await runJob(job, { ...options, jobRun: { meta } })
  if (!result.ok)
    throw new FeedrunnerError(
      `the pipeline of ${job.spec.name} failed: ${result.errors.join('; ')}`,
      { kind: result.failures[0]?.kind ?? 'upstream', cause: result.failures[0] },
    )
  return resultDecimal(result.outputs[0], job.spec.name)
}

/** The result as a decimal, as utils.ToDecimal reads it: a number, a decimal, or numeric text. */
export function resultDecimal(value: unknown, jobName: string): Decimal {
  const decimal = toDecimal(value)
  if (decimal !== undefined) return decimal
  throw new FeedrunnerError(
    `the pipeline of ${jobName} ended in ${JSON.stringify(String(value)).slice(0, 60)}, not a number to submit`,
    { kind: 'bad_input' },
  )
}
