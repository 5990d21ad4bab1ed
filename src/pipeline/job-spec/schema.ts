import { isAddress } from 'ethers'
import { z } from 'zod'
import { parseDuration } from '../duration.ts'

/**
 * The TOML fields of a Chainlink `directrequest` job spec, as this runner accepts them. Every field
 * says in words what it is for and what it takes: the loader builds its messages from these texts
 * ("contractAddress is required: the Operator contract whose OracleRequest logs this job answers"),
 * never from the schema library's generic ones.
 */
export const FIELD_PURPOSE: Readonly<Record<string, string>> = {
  type: 'the job type; feedrunner runs "directrequest" jobs',
  schemaVersion: 'the spec format version, 1',
  name: 'the job name shown in logs, metrics and run records',
  externalJobID:
    'the job id consumers put in their requests (optional: derived from the name and file name when absent)',
  contractAddress: 'the Operator contract whose OracleRequest logs this job answers',
  evmChainID:
    'the chain id the Operator is on (optional while the runner serves exactly one chain)',
  minIncomingConfirmations: 'blocks a request waits on chain before it is run',
  minContractPaymentLinkJuels: 'the least payment (LINK juels) a request must carry',
  requesters: 'the only requester addresses this job answers',
  maxTaskDuration: 'the time one task may take',
  gasLimit: 'the gas limit of the fulfilment transaction',
  forwardingAllowed: 'whether fulfilments may go through a forwarder',
  observationSource: 'the pipeline, as DOT tasks and edges',
}

/** What each field takes, in words ("must be ..."), when it is given but wrong. */
const EXPECTED = {
  type: 'must be "directrequest"',
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
const says = (message: string) => ({ error: () => message })

const address = (message: string) =>
  z.string(says(message)).refine((text) => /^0x[0-9a-fA-F]{40}$/.test(text) && isAddress(text), {
    message,
  })
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

export const jobSpecFields = z.strictObject({
  type: z.literal('directrequest', says(EXPECTED.type)),
  schemaVersion: z.literal(1, says(EXPECTED.schemaVersion)),
  name: z.string(says(EXPECTED.name)).trim().min(1, EXPECTED.name),
  externalJobID: z
    .string(says(EXPECTED.externalJobID))
    .regex(UUID_PATTERN, EXPECTED.externalJobID)
    .transform(canonicalUuid)
    .optional(),
  contractAddress: address(EXPECTED.address),
  evmChainID: unsignedInteger(EXPECTED.chainId)
    .refine((id) => id > 0n, { message: EXPECTED.chainId })
    .optional(),
  // A number or its text ("3"), as Chainlink's TOML decoder takes either.
  minIncomingConfirmations: z
    .union(
      [
        z.number(says(EXPECTED.confirmations)),
        z
          .string()
          .regex(/^\s*\d{1,4}\s*$/, EXPECTED.confirmations)
          .transform(Number),
      ],
      says(EXPECTED.confirmations),
    )
    .pipe(
      z
        .number()
        .int(EXPECTED.confirmations)
        .min(0, EXPECTED.confirmations)
        .max(1000, EXPECTED.confirmations),
    )
    .optional(),
  minContractPaymentLinkJuels: unsignedInteger(EXPECTED.juels).optional(),
  requesters: z.array(address(EXPECTED.address), says(EXPECTED.requesters)).optional(),
  maxTaskDuration: duration.optional(),
  gasLimit: z
    .number(says(EXPECTED.gasLimit))
    .int(EXPECTED.gasLimit)
    .positive(EXPECTED.gasLimit)
    .optional(),
  forwardingAllowed: z.boolean(says(EXPECTED.bool)).optional(),
  observationSource: z.string(says(EXPECTED.observationSource)).min(1, EXPECTED.observationSource),
})

export type JobSpecFields = z.output<typeof jobSpecFields>

/** A loaded spec: its externalJobID is always known (given, or derived by the loader). */
export type JobSpec = Omit<JobSpecFields, 'externalJobID'> & { externalJobID: string }

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
