import { isAddress } from 'ethers'
import { z } from 'zod'
import { parseDuration } from '../duration.ts'

/**
 * What the fields every job type shares are for, in words: the loader builds its messages from these
 * texts ("name is required in a directrequest spec: the job name shown in logs, metrics and run records"), never from the
 * schema library's generic ones. Each job type adds its own (`job-types.ts`).
 */
export const SHARED_PURPOSE: Readonly<Record<string, string>> = {
  type: 'the job type',
  schemaVersion: 'the spec format version, 1',
  name: 'the job name shown in logs, metrics and run records',
  externalJobID:
    'the job id that names the job outside the runner (optional: derived from the name and file name when absent)',
  maxTaskDuration: 'the time one task may take',
  gasLimit: 'the gas limit of the transactions its ethtx tasks send',
  forwardingAllowed: 'whether its transactions may go through a forwarder',
  observationSource: 'the pipeline, as DOT tasks and edges',
}

/** What each field takes, in words ("must be ..."), when it is given but wrong. */
export const EXPECTED = {
  schemaVersion: 'must be 1',
  name: 'must be a non-empty string',
  externalJobID: 'must be a UUID such as "0eec7e1d-d0d2-476c-a1a8-72dfb6633f46"',
  address: 'must be a 0x-prefixed 20-byte address with a valid EIP-55 checksum',
  chainId: 'must be a chain id, a positive integer such as 1 or "11155111"',
  confirmations: 'must be a whole number of blocks from 0 to 1000',
  juels: 'must be a non-negative integer of LINK juels, such as "100000000000000000" (0.1 LINK)',
  requesters: 'must be a list of addresses, such as ["0x9fE4...a6e0"]',
  duration: 'must be a duration such as "30s", "1m" or "0s" (no limit)',
  gasLimit: 'must be a positive whole number of gas, such as 500000',
  bool: 'must be true or false',
  observationSource: 'must be a non-empty string of DOT tasks, usually a """ multi-line string',
} as const

/** A zod error option: the same words whatever went wrong with the value. */
export const says = (message: string) => ({ error: () => message })

export const address = (message: string) =>
  z.string(says(message)).refine((text) => /^0x[0-9a-fA-F]{40}$/.test(text) && isAddress(text), {
    message,
  })
export const unsignedInteger = (message: string) =>
  z
    .union(
      [
        z.number(says(message)).int(message).nonnegative(message),
        z.string().regex(/^\d+$/, message),
      ],
      says(message),
    )
    .transform((value) => BigInt(value))
const duration = z
  .string(says(EXPECTED.duration))
  .refine((text) => parseDuration(text) !== undefined, { message: EXPECTED.duration })

/** Chainlink's UUID parser takes the 32 hex digits with or without dashes. */
export const UUID_PATTERN =
  /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/

/** A UUID in its canonical form: lowercase, dashed. */
export function canonicalUuid(text: string): string {
  return text.toLowerCase().replace(/^(.{8})-?(.{4})-?(.{4})-?(.{4})-?(.{12})$/, '$1-$2-$3-$4-$5')
}

/** A chain id, as Chainlink's TOML decoder takes it: a number or its text. */
export const chainId = unsignedInteger(EXPECTED.chainId).refine((id) => id > 0n, {
  message: EXPECTED.chainId,
})

/**
 * The fields every job type shares (Chainlink's "shared fields"), but `type`, which each job type
 * declares as its literal. A job type that requires `name` says so with its own `name`.
 */
export const sharedFields = {
  schemaVersion: z.literal(1, says(EXPECTED.schemaVersion)),
  name: z.string(says(EXPECTED.name)).trim().min(1, EXPECTED.name).optional(),
  externalJobID: z
    .string(says(EXPECTED.externalJobID))
    .regex(UUID_PATTERN, EXPECTED.externalJobID)
    .transform(canonicalUuid)
    .optional(),
  maxTaskDuration: duration.optional(),
  gasLimit: z
    .number(says(EXPECTED.gasLimit))
    .int(EXPECTED.gasLimit)
    .positive(EXPECTED.gasLimit)
    .optional(),
  forwardingAllowed: z.boolean(says(EXPECTED.bool)).optional(),
  observationSource: z.string(says(EXPECTED.observationSource)).min(1, EXPECTED.observationSource),
}

/** One task of a validated job, as the loader reads it from observationSource. */
export interface PipelineTask {
  id: string
  type: string
  attributes: Readonly<Record<string, string>>
  line: number
  /** Explicit predecessors, in the order of their edges: the task's inputs. */
  inputs: string[]
  /** Every task that must finish first: inputs plus the tasks named in `$(...)`. */
  dependsOn: string[]
  /** Output ordering of final results (Chainlink's `index`), default 0. */
  index: number
}
