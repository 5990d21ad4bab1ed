import { z } from 'zod'
import { BLOCK_ROOT_VARIABLES } from '../vars.ts'
import { parseSchedule } from './schedule.ts'
import { FLUX_FIELDS, FLUX_PURPOSE, fluxSpecProblems } from './flux-schema.ts'
import type { RunTrigger } from './run-trigger.ts'
import {
  address,
  chainId,
  EXPECTED,
  says,
  sharedFields,
  SHARED_PURPOSE,
  unsignedInteger,
  type PipelineTask,
} from './schema.ts'

export type { RunTrigger } from './run-trigger.ts'

/**
 * One Chainlink job type as feedrunner runs it. Adding a job type is one entry in `JOB_TYPES`:
 * its fields (beside the shared ones), what each is for, the variables its runs have, and what
 * starts a run. The runner then names, with the compiler's help, what it does for each type.
 */
interface JobTypeDefinition<Type extends string, Shape extends z.ZodRawShape> {
  type: Type
  /** In words, what starts a run: `jobs validate` lists it. */
  runs: string
  trigger: RunTrigger
  /** The type's own fields; a `name` here replaces the shared optional one (to require it). */
  fields: Shape
  /** What each of the type's fields is for, as a missing field's message says it. */
  purpose: { readonly [Field in keyof Shape]: string }
  /** The `jobSpec.*` and `jobRun.*` variables its runs have. */
  variables: { jobSpec: readonly string[]; jobRun: readonly string[] }
  /** What a run's `jobRun.meta` holds below it (keys; undefined: nothing but meta itself). */
  meta?: { group: string; fields: readonly string[] }
  /** What is refused beyond each field alone: fields read together, and with the pipeline. */
  check?: (
    fields: { [Field in keyof Shape]: z.output<Shape[Field]> } & {
      maxTaskDuration?: string
    },
    pipeline: { tasks: readonly PipelineTask[]; terminal: readonly string[] },
  ) => Array<{ field: string; message: string }>
}

function defineJobType<Type extends string, Shape extends z.ZodRawShape>(
  definition: JobTypeDefinition<Type, Shape>,
) {
  const schema = z.strictObject({
    type: z.literal(definition.type, says(`must be "${definition.type}"`)),
    ...sharedFields,
    ...definition.fields,
  })
  return { ...definition, schema }
}

const JOB_SPEC_VARIABLES = ['databaseID', 'name', 'externalJobID', 'evmChainID', 'gasLimit']

/** `jobRun.meta.oracleRequest`'s fields, as the node's oracleRequestToMap names them. */
export const ORACLE_REQUEST_FIELDS = [
  'specId',
  'requester',
  'requestId',
  'payment',
  'callbackAddr',
  'callbackFunctionId',
  'cancelExpiration',
  'dataVersion',
  'data',
] as const

const confirmations = z
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

const SCHEDULE_EXPECTED = 'must be a schedule such as "CRON_TZ=UTC 0 */5 * * * *" or "@every 30s"'
const schedule = z.string(says(SCHEDULE_EXPECTED)).superRefine((text, context) => {
  const parsed = parseSchedule(text)
  if ('problem' in parsed) context.addIssue({ code: 'custom', message: parsed.problem })
})

const INITIATORS_EXPECTED =
  'must be a list of { name = "...", spec = "{...}" } tables, as in [{ name = "my-ei", spec = "{}" }]'
const externalInitiator = z.strictObject(
  {
    name: z
      .string(says(INITIATORS_EXPECTED))
      .regex(/^[A-Za-z0-9_-]{1,64}$/, 'must be 1-64 letters, digits, "-" or "_"'),
    spec: z
      .union([z.string(), z.record(z.string(), z.unknown())], says(INITIATORS_EXPECTED))
      .refine((spec) => typeof spec !== 'string' || isJson(spec), {
        message: 'must be JSON text, such as "{}"',
      })
      .optional(),
  },
  says(INITIATORS_EXPECTED),
)

function isJson(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

/** Every job type feedrunner runs, by its `type`: the one place a job type is declared. */
export const JOB_TYPES = {
  directrequest: defineJobType({
    type: 'directrequest',
    runs: "a run per OracleRequest log of the Operator at contractAddress (the requester's payment)",
    trigger: 'request',
    fields: {
      name: z.string(says(EXPECTED.name)).trim().min(1, EXPECTED.name),
      contractAddress: address(EXPECTED.address),
      evmChainID: chainId.optional(),
      minIncomingConfirmations: confirmations.optional(),
      minContractPaymentLinkJuels: unsignedInteger(EXPECTED.juels).optional(),
      requesters: z.array(address(EXPECTED.address), says(EXPECTED.requesters)).optional(),
    },
    purpose: {
      name: SHARED_PURPOSE.name!,
      contractAddress: 'the Operator contract whose OracleRequest logs this job answers',
      evmChainID:
        'the chain id the Operator is on (optional while the runner serves exactly one chain)',
      minIncomingConfirmations: 'blocks a request waits on chain before it is run',
      minContractPaymentLinkJuels: 'the least payment (LINK juels) a request must carry',
      requesters: 'the only requester addresses this job answers',
    },
    variables: {
      jobSpec: [...JOB_SPEC_VARIABLES, 'contractAddress'],
      jobRun: [
        'logData',
        'logTopics',
        'logAddress',
        'logBlockHash',
        'logBlockNumber',
        'logTxHash',
        'meta',
        ...BLOCK_ROOT_VARIABLES,
      ],
    },
    meta: { group: 'oracleRequest', fields: ORACLE_REQUEST_FIELDS },
  }),
  cron: defineJobType({
    type: 'cron',
    runs: 'a run per tick of its schedule, once across every runner sharing the Redis',
    trigger: 'tick',
    fields: {
      schedule,
      evmChainID: chainId.optional(),
    },
    purpose: {
      schedule:
        'when the job runs: six fields after a zone ("CRON_TZ=UTC 0 */5 * * * *") or "@every 30s"',
      evmChainID:
        'the chain its ethtx tasks write to (optional while the runner serves exactly one chain)',
    },
    variables: { jobSpec: JOB_SPEC_VARIABLES, jobRun: ['meta'] },
    // feedrunner's: the tick a run is for (epoch ms by Redis's clock), so a write can say which.
    meta: { group: 'cron', fields: ['tick'] },
  }),
  webhook: defineJobType({
    type: 'webhook',
    runs: 'a run per authorised POST /v2/jobs/<externalJobID>/runs, its JSON body as $(jobRun.requestBody)',
    trigger: 'call',
    fields: {
      externalInitiators: z.array(externalInitiator, says(INITIATORS_EXPECTED)).optional(),
      evmChainID: chainId.optional(),
    },
    purpose: {
      externalInitiators:
        'the external initiators (feedrunner initiators create NAME) that may start its runs',
      evmChainID:
        'the chain its ethtx tasks write to (optional while the runner serves exactly one chain)',
    },
    variables: { jobSpec: JOB_SPEC_VARIABLES, jobRun: ['requestBody', 'meta'] },
  }),
  fluxmonitor: defineJobType({
    type: 'fluxmonitor',
    runs: 'a submission to the FluxAggregator at contractAddress per round it should answer: past the threshold, on the heartbeat, or a round another oracle started',
    trigger: 'round',
    fields: FLUX_FIELDS,
    purpose: FLUX_PURPOSE,
    variables: { jobSpec: [...JOB_SPEC_VARIABLES, 'contractAddress'], jobRun: ['meta'] },
    check: fluxSpecProblems,
  }),
}

export type JobType = keyof typeof JOB_TYPES

/** A spec's fields as the TOML gives them, checked: one shape per job type, told apart by `type`. */
export type JobSpecFields = {
  [Type in JobType]: z.output<(typeof JOB_TYPES)[Type]['schema']>
}[JobType]

type Loaded<Fields> = Fields extends unknown
  ? Omit<Fields, 'externalJobID' | 'name'> & { externalJobID: string; name: string }
  : never

/** A loaded spec: its name and externalJobID are always known (given, or derived by the loader). */
export type JobSpec = Loaded<JobSpecFields>

/** The loaded spec of one job type. */
export type SpecOf<Type extends JobType> = Extract<JobSpec, { type: Type }>

/** The spec of a job that answers `OracleRequest` logs, with its Operator and its requesters. */
export function isDirectRequest(spec: JobSpec): spec is SpecOf<'directrequest'> {
  return spec.type === 'directrequest'
}

export function isJobType(type: unknown): type is JobType {
  return typeof type === 'string' && Object.hasOwn(JOB_TYPES, type)
}

/** The job types, in words: what `jobs validate` says it runs. */
export function jobTypesInWords(): string {
  return Object.values(JOB_TYPES)
    .map((definition) => `${definition.type} (${definition.runs})`)
    .join('; ')
}

/** Every field any job type takes: the conformance table's rows. */
export function allSpecFields(): string[] {
  const fields = new Set<string>()
  for (const definition of Object.values(JOB_TYPES))
    for (const field of Object.keys(definition.schema.shape)) fields.add(field)
  return [...fields]
}
