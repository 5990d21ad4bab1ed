import { isAddress } from 'ethers'
import { z } from 'zod'
import { parseDuration } from '../duration.ts'
import { canonicalUuid, UUID_PATTERN } from './schema.ts'

/**
 * The TOML fields of a Chainlink `fluxmonitor` job spec (docs.chain.link, "Flux Monitor Jobs"), as
 * this runner accepts them. Each field's purpose is said in words; the loader builds its messages
 * from these texts.
 */
export const FLUX_FIELD_PURPOSE: Readonly<Record<string, string>> = {
  type: 'the job type, "fluxmonitor" here',
  schemaVersion: 'the spec format version, 1',
  name: 'the job name shown in logs and metrics',
  externalJobID: 'the job id (optional: derived from the name and file name when absent)',
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
  pollTimerDisabled: 'whether polling is off (rounds then come only from the heartbeat and others)',
  drumbeatEnabled: 'whether rounds are also started on a cron schedule',
  drumbeatSchedule: 'the drumbeat cron schedule, such as "CRON_TZ=UTC 0 */20 * * * *"',
  drumbeatRandomDelay: 'a random delay added to each drumbeat tick',
  minPayment: 'the least payment (LINK juels) per submission this node accepts',
  maxTaskDuration: 'the time one task may take',
  gasLimit: 'the gas limit of each submission',
  forwardingAllowed: 'whether submissions may go through a forwarder',
  observationSource: 'the pipeline whose result is the value submitted, as DOT tasks and edges',
}

const EXPECTED = {
  type: 'must be "fluxmonitor"',
  schemaVersion: 'must be 1',
  name: 'must be a non-empty string',
  externalJobID: 'must be a UUID such as "0eec7e1d-d0d2-476c-a1a8-72dfb6633f46"',
  address: 'must be a 0x-prefixed 20-byte address with a valid EIP-55 checksum',
  chainId: 'must be a chain id, a positive integer such as 1 or "11155111"',
  threshold: 'must be a non-negative number such as 0.5',
  duration: 'must be a duration such as "30s" or "1m"',
  bool: 'must be true or false',
  juels: 'must be a non-negative integer of LINK juels, such as "100000000000000000" (0.1 LINK)',
  schedule: 'must be a non-empty cron schedule',
  gasLimit: 'must be a positive whole number of gas, such as 500000',
  observationSource: 'must be a non-empty string of DOT tasks, usually a """ multi-line string',
} as const

const says = (message: string) => ({ error: () => message })
const duration = z
  .string(says(EXPECTED.duration))
  .refine((text) => parseDuration(text) !== undefined, { message: EXPECTED.duration })
const unsignedInteger = (message: string) =>
  z
    .union(
      [
        z.number(says(message)).int(message).nonnegative(message),
        z.string().regex(/^\d+$/, message),
      ],
      says(message),
    )
    .transform((value) => BigInt(value))
// A float in the TOML, as Chainlink's spec takes it; text keeps the decimal exact.
const threshold = z
  .union(
    [
      z.number(says(EXPECTED.threshold)).nonnegative(EXPECTED.threshold),
      z.string().regex(/^\d+(\.\d+)?$/, EXPECTED.threshold),
    ],
    says(EXPECTED.threshold),
  )
  .transform((value) => String(value))

export const fluxSpecFields = z.strictObject({
  type: z.literal('fluxmonitor', says(EXPECTED.type)),
  schemaVersion: z.literal(1, says(EXPECTED.schemaVersion)),
  name: z.string(says(EXPECTED.name)).trim().min(1, EXPECTED.name),
  externalJobID: z
    .string(says(EXPECTED.externalJobID))
    .regex(UUID_PATTERN, EXPECTED.externalJobID)
    .transform(canonicalUuid)
    .optional(),
  contractAddress: z
    .string(says(EXPECTED.address))
    .refine((text) => /^0x[0-9a-fA-F]{40}$/.test(text) && isAddress(text), {
      message: EXPECTED.address,
    }),
  evmChainID: unsignedInteger(EXPECTED.chainId)
    .refine((id) => id > 0n, { message: EXPECTED.chainId })
    .optional(),
  threshold: threshold.optional(),
  absoluteThreshold: threshold.optional(),
  idleTimerPeriod: duration.optional(),
  idleTimerDisabled: z.boolean(says(EXPECTED.bool)).optional(),
  pollTimerPeriod: duration.optional(),
  pollTimerDisabled: z.boolean(says(EXPECTED.bool)).optional(),
  drumbeatEnabled: z.boolean(says(EXPECTED.bool)).optional(),
  drumbeatSchedule: z.string(says(EXPECTED.schedule)).trim().min(1, EXPECTED.schedule).optional(),
  drumbeatRandomDelay: duration.optional(),
  minPayment: unsignedInteger(EXPECTED.juels).optional(),
  maxTaskDuration: duration.optional(),
  gasLimit: z
    .number(says(EXPECTED.gasLimit))
    .int(EXPECTED.gasLimit)
    .positive(EXPECTED.gasLimit)
    .optional(),
  forwardingAllowed: z.boolean(says(EXPECTED.bool)).optional(),
  observationSource: z.string(says(EXPECTED.observationSource)).min(1, EXPECTED.observationSource),
})

export type FluxSpecFields = z.output<typeof fluxSpecFields>
