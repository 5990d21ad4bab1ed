import { Decimal } from 'decimal.js'
import { z } from 'zod'
import { parseDuration } from '../duration.ts'
import { parseSchedule } from './schedule.ts'
import { address, chainId, EXPECTED, says, unsignedInteger } from './schema.ts'
import type { PipelineTask } from './schema.ts'

/**
 * The fields of a Chainlink `fluxmonitor` spec (docs.chain.link, "Flux Monitor Jobs") beside the
 * shared ones, what each is for, and the checks that read several fields and the pipeline together,
 * as Chainlink's fluxmonitorv2/validate.go makes them.
 */

const THRESHOLD_EXPECTED = 'must be a non-negative number such as 0.5'
// A node reads quoted text with Go's strconv.ParseFloat: `.5`, `5.`, `+0.5` and `1e2` are numbers.
const DECIMAL_TEXT = /^\+?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/
const FLOAT32_EXPECTED = 'must fit a 32-bit float (at most 3.4e38), as a node holds a threshold'
// A float in the TOML, as Chainlink's spec takes it, kept as the decimal text written (what the
// monitor compares with is that number as a float32: flux-job.ts).
const fitsFloat32 = (value: number | string) => asFloat32(value) !== 'Infinity'
const threshold = z
  .union(
    [
      z
        .number(says(THRESHOLD_EXPECTED))
        .nonnegative(THRESHOLD_EXPECTED)
        .refine(fitsFloat32, FLOAT32_EXPECTED),
      // An exponent past what a decimal holds would be read as Infinity: a node refuses it too.
      z
        .string()
        .refine((text) => DECIMAL_TEXT.test(text) && new Decimal(text).isFinite(), {
          message: THRESHOLD_EXPECTED,
          abort: true,
        })
        .refine(fitsFloat32, FLOAT32_EXPECTED),
    ],
    says(THRESHOLD_EXPECTED),
  )
  .transform((value) => new Decimal(value).toString())
const duration = z
  .string(says(EXPECTED.duration))
  .refine((text) => parseDuration(text) !== undefined, { message: EXPECTED.duration })
// Text alone: Chainlink reads the schedule only when the drumbeat is on (fluxSpecProblems).
const drumbeatSchedule = z.string(says('must be a schedule such as "CRON_TZ=UTC 0 */20 * * * *"'))
const bool = z.boolean(says(EXPECTED.bool))

/**
 * A threshold as a node holds it: Chainlink's FluxMonitorSpec keeps threshold and absoluteThreshold
 * as float32, and its deviation checker reads them with decimal.NewFromFloat(float64(...)), the
 * shortest text that gives the same float, as JavaScript's own number text is. So 0.1 compares
 * as 0.10000000149011612 on every node of a feed, feedrunner's among them.
 */
export function asFloat32(value: number | string): string {
  return String(Math.fround(Number(value)))
}

export const FLUX_FIELDS = {
  contractAddress: address(EXPECTED.address),
  evmChainID: chainId.optional(),
  threshold: threshold.optional(),
  absoluteThreshold: threshold.optional(),
  idleTimerPeriod: duration.optional(),
  idleTimerDisabled: bool.optional(),
  pollTimerPeriod: duration.optional(),
  pollTimerDisabled: bool.optional(),
  drumbeatEnabled: bool.optional(),
  drumbeatSchedule: drumbeatSchedule.optional(),
  drumbeatRandomDelay: duration.optional(),
  minPayment: unsignedInteger(EXPECTED.juels).optional(),
}

export const FLUX_PURPOSE = {
  contractAddress: 'the FluxAggregator contract this job submits to',
  evmChainID:
    'the chain id the aggregator is on (optional while the runner serves exactly one chain)',
  threshold:
    'the relative deviation, in percent of the latest submission, that starts a round (0: any change)',
  absoluteThreshold:
    'the absolute deviation, in the units submitted, the change must exceed (0: any change)',
  idleTimerPeriod: 'the heartbeat: a round is started this long after the last one started',
  idleTimerDisabled: 'whether the heartbeat is off',
  pollTimerPeriod: 'how often the value is fetched and compared with the latest submission',
  pollTimerDisabled: 'whether polling is off (rounds then come from the heartbeat and others)',
  drumbeatEnabled: 'whether rounds are also started on a cron schedule',
  drumbeatSchedule: 'the drumbeat cron schedule, such as "CRON_TZ=UTC 0 */20 * * * *"',
  drumbeatRandomDelay:
    'the most a node waits, at random, after a drumbeat tick before it starts a round (so that the nodes of a feed do not all start one)',
  minPayment: 'the least payment (LINK juels) per submission this node accepts',
}

export interface FluxFieldValues {
  maxTaskDuration?: string
  idleTimerPeriod?: string
  idleTimerDisabled?: boolean
  pollTimerPeriod?: string
  pollTimerDisabled?: boolean
  drumbeatEnabled?: boolean
  drumbeatSchedule?: string
}

/** Chainlink's default HTTP timeout: a poll shorter than a fetch may take is refused, as there. */
const DEFAULT_HTTP_TIMEOUT_MS = 15_000

/** What a fluxmonitor spec is refused for beyond each field alone; each names its field. */
export function fluxSpecProblems(
  fields: FluxFieldValues,
  pipeline: { tasks: readonly PipelineTask[]; terminal: readonly string[] },
): Array<{ field: string; message: string }> {
  const problems: Array<{ field: string; message: string }> = []
  const at = (field: string, message: string) => problems.push({ field, message })
  if (pipeline.terminal.length !== 1)
    at(
      'observationSource',
      `the pipeline must end in one task, whose result is the value submitted; it ends in ${pipeline.terminal.length} (${pipeline.terminal.join(', ')})`,
    )
  if (fields.drumbeatEnabled) {
    const schedule = parseSchedule(fields.drumbeatSchedule ?? '')
    if ('problem' in schedule) at('drumbeatSchedule', schedule.problem)
    if (!fields.idleTimerDisabled)
      at(
        'idleTimerDisabled',
        'with drumbeatEnabled = true the idle timer must be off, as a Chainlink node requires: set idleTimerDisabled = true (the drumbeat starts the rounds the heartbeat would)',
      )
  }
  if (!fields.pollTimerDisabled) {
    if (fields.pollTimerPeriod === undefined)
      at(
        'pollTimerPeriod',
        `pollTimerPeriod is required unless pollTimerDisabled = true: ${FLUX_PURPOSE.pollTimerPeriod}`,
      )
    else {
      const least = leastFetchTimeout(fields, pipeline.tasks)
      if ((parseDuration(fields.pollTimerPeriod) ?? 0) < least)
        at(
          'pollTimerPeriod',
          `pollTimerPeriod ${fields.pollTimerPeriod} is shorter than a fetch may take (${least / 1000}s: the least of 15s, maxTaskDuration and the tasks' timeouts): poll less often, or give the tasks a shorter timeout`,
        )
    }
  }
  if (!fields.idleTimerDisabled && !((parseDuration(fields.idleTimerPeriod ?? '') ?? 0) > 0))
    at(
      'idleTimerPeriod',
      `idleTimerPeriod is required unless idleTimerDisabled = true: ${FLUX_PURPOSE.idleTimerPeriod}`,
    )
  if (fields.pollTimerDisabled && fields.idleTimerDisabled && !fields.drumbeatEnabled)
    at(
      'pollTimerDisabled',
      'pollTimerDisabled and idleTimerDisabled are both true: this node would only ever answer rounds others start; enable one of them',
    )
  return problems
}

function leastFetchTimeout(fields: FluxFieldValues, tasks: readonly PipelineTask[]): number {
  const candidates = [DEFAULT_HTTP_TIMEOUT_MS]
  const spec = parseDuration(fields.maxTaskDuration ?? '0') ?? 0
  if (spec > 0) candidates.push(spec)
  for (const task of tasks) {
    const timeout = parseDuration(task.attributes.timeout ?? '0') ?? 0
    if (timeout > 0) candidates.push(timeout)
  }
  return Math.min(...candidates)
}
