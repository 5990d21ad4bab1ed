/** The job pipeline: spec loading, the DAG executor, task types, and the dry-run request builder. */
export {
  RecordingChainAccess,
  type BlockRoots,
  type CallRequest,
  type ChainAccess,
  type GasEstimateRequest,
  type TransactionOutcome,
  type TransactionRequest,
} from './chain-access.ts'
export {
  dryRunJob,
  FEED_CONSUMER_CALLBACKS,
  fulfilmentValueType,
  type DryRun,
  type DryRunOptions,
  type RecordedRequest,
} from './dry-run.ts'
export {
  answerLabel,
  answerShapeOf,
  CONSUMER_VALUE_TYPES,
  consumerValueType,
  decodeAnswer,
  decodeCallbackAnswer,
  type AnswerShape,
  type AnswerShapeOf,
  type ConsumerValueType,
  type FulfilMethod,
} from './answer-shape.ts'
export {
  isolationFromSettings,
  RunCrashedError,
  TaskIsolation,
} from './isolation/task-isolation.ts'
export {
  originOf,
  runJob,
  TaskFailure,
  type RunOptions,
  type RunResult,
  type TaskOutcome,
} from './executor.ts'
export {
  loadJobSpec,
  loadJobSpecFile,
  parseJobSpecFile,
  type Job,
  type PipelineTask,
} from './job-spec/loader.ts'
export { duplicateJobIdProblems } from './job-spec/duplicates.ts'
export { jobTableMarkdown, summariseJob, type JobSummary } from './job-spec/describe.ts'
export { formatProblem, SpecError, type SpecProblem } from './job-spec/problems.ts'
export {
  isDirectRequest,
  isJobType,
  JOB_TYPES,
  jobTypesInWords,
  type JobSpec,
  type JobSpecFields,
  type JobType,
  type RunTrigger,
  type SpecOf,
} from './job-spec/job-types.ts'
export { parseSchedule, type CronSchedule } from './job-spec/schedule.ts'
export {
  COMMON_ATTRIBUTES,
  createTaskRun,
  TaskError,
  type RunContext,
  type TaskDefinition,
  type TaskInput,
  type TaskRun,
} from './task.ts'
export { TASK_TYPES } from './tasks/index.ts'
export {
  buildOracleRequest,
  decodeFulfilledValue,
  decodeAnyFulfilment,
  decodeFulfillment,
  encodeRequestParams,
  FULFILL_ORACLE_REQUEST2,
  ORACLE_REQUEST_EVENT,
  ORACLE_REQUEST_TOPIC,
  oracleRequestMeta,
  selectorOf,
  specIdsOf,
  type OracleRequest,
  type OracleRequestInit,
  type RequestParamValue,
} from './request.ts'
export { boundedPlain, describeValue, toJsonText, toPlain } from './values.ts'
export { DEFAULT_PIPELINE_LIMITS, pipelineLimits, type PipelineLimits } from './limits.ts'
export type { Vars } from './vars.ts'
export type { HostResolver } from './tasks/address-guard.ts'
