import { errorKindOf, isRetryable, type FeedrunnerErrorOptions } from '../config/errors.ts'
import type { Aliases } from '../reduce/index.ts'
import type { ChainAccess } from './chain-access.ts'
import type { TaskIsolation } from './isolation/task-isolation.ts'
import { TaskError } from './task-error.ts'
export { TaskError } from './task-error.ts'
import type { PipelineLimits } from './limits.ts'
import { parseBoolText, type AttributeKind } from './literals.ts'
import type { HostResolver } from './tasks/address-guard.ts'
import { getVar, jsonWithVarExpressions, VarError, wholeVarExpression, type Vars } from './vars.ts'

/**
 * The one interface every task type implements (as Chainlink's Task): a type name, the attributes it
 * understands (for the loader's checks) and `run`, which gets its resolved inputs and returns a value.
 */
export interface TaskDefinition {
  readonly type: string
  /** Attributes this task reads, besides the common ones (COMMON_ATTRIBUTES). */
  readonly attributes: readonly string[]
  /** Attributes that must be present in the spec. */
  readonly required?: readonly string[]
  /** Attributes holding JSON with `$(...)` placeholders; the loader checks they parse. */
  readonly jsonAttributes?: readonly string[]
  /** What each attribute takes: a value written in the spec is checked at load time (literals.ts). */
  readonly kinds?: Readonly<Record<string, AttributeKind>>
  /** Static checks of literal attributes at load time (an ABI that does not parse, ...). */
  check?(attributes: Readonly<Record<string, string>>): { attribute: string; message: string }[]
  /** How many errored inputs the task tolerates itself (median etc. use allowedFaults); default 0. */
  readonly toleratesInputErrors?: boolean
  /**
   * Whether a failure of this task may send the whole run back to its queue, to be tried again later
   * (Chainlink's RunInfo.IsRetryable): `by-error` (the default) when the error says it is retryable,
   * `never` when the spec's `retries` attribute is the only retry the task gets (a source chosen by
   * whoever made the request is not fetched again and again on the node's time). Either way the
   * task's own `retries` retry a retryable error within the run.
   */
  readonly retriesRun?: 'by-error' | 'never'
  /**
   * Where the task runs when the runner gives the run isolates (src/pipeline/isolation/): `isolate`
   * (the default) for a pure task, whose memory and time are then bounded by its isolate; `main` for
   * a task that reaches the network, the chain or the environment (bridge, http, ethtx, ethcall).
   */
  readonly runsIn?: 'main' | 'isolate'
  run(task: TaskRun): Promise<unknown>
}

/** Attributes every task accepts (Chainlink's BaseTask). */
export const COMMON_ATTRIBUTES = [
  'type',
  'index',
  'timeout',
  'retries',
  'minBackoff',
  'maxBackoff',
  'failEarly',
] as const

/** What a task sees of its environment. */
export interface RunContext {
  /** Identifies the run (for ethtx idempotency keys); the runner uses chain:operator:requestId. */
  runId: string
  chain?: ChainAccess
  /** Field aliases jsonparse resolves (the catalog's); none by default. */
  aliases?: Aliases
  /** The spec's gasLimit, used by ethtx when the task gives none. */
  defaultGasLimit?: bigint
  /** The job's forwardingAllowed: its ethtx tasks send through `forwarder`. */
  forwardingAllowed?: boolean
  /** The chain's AuthorizedForwarder (FORWARDER_ADDRESS, or the chain's forwarder_address). */
  forwarder?: string
  /** The addresses the runner's sender keys send from (for ethtx `from`); unknown in dry runs. */
  senders?: readonly string[]
  /** Environment for settings such as BRIDGE_<NAME>_URL. */
  env: NodeJS.ProcessEnv
  /** Body caps and parse bounds (the settings'); their defaults when absent. */
  limits?: PipelineLimits
  /** How the http task's private-address guard resolves names (tests inject a rebinding one). */
  resolveHost?: HostResolver
  /**
   * Where a bridge task tells whether its bridge answered (the runner's outage report, one line when
   * the adapter stops answering and one when it is back, instead of a line per run).
   */
  bridgeReach?: (name: string, url: string) => Reachability
  /** Isolates for pure tasks (the runner's); without them every task runs in this thread. */
  isolation?: TaskIsolation
  /** Who asked for the run (its requester's address): the isolates are shared fairly between them. */
  requester?: string
}

/** What a task tells about a service it called: it answered (whatever it said), or could not be reached. */
export interface Reachability {
  answered(): void
  failed(error: unknown): void
}

export type TaskInput =
  { ok: true; value: unknown; from: string } | { ok: false; error: Error; from: string }

export interface TaskRun {
  readonly id: string
  readonly type: string
  readonly inputs: readonly TaskInput[]
  readonly vars: Vars
  readonly context: RunContext
  /** Aborted when the task's timeout passes or the run stops. */
  readonly signal: AbortSignal
  /** The attribute's text as written, or undefined. */
  raw(name: string): string | undefined
  /**
   * Chainlink's usual order: a whole `$(keypath)` gives the typed variable; otherwise the literal text;
   * when the attribute is absent and `fromInput` is set, the first input's value.
   */
  value(name: string, options?: { fromInput?: boolean }): unknown
  /** A JSON attribute with `$(...)` replaced by typed values (undefined when absent). */
  json(name: string, options?: { tolerateErrors?: boolean }): unknown
  /** Values of all inputs; fails when more than `maxErrors` of them errored. */
  inputValues(maxErrors?: number): unknown[]
}

export function createTaskRun(init: {
  id: string
  type: string
  attributes: Readonly<Record<string, string>>
  inputs: readonly TaskInput[]
  vars: Vars
  context: RunContext
  signal: AbortSignal
}): TaskRun {
  const { attributes, inputs, vars } = init
  const raw = (name: string): string | undefined =>
    Object.hasOwn(attributes, name) ? attributes[name] : undefined
  return {
    ...init,
    raw,
    value(name, options = {}) {
      const text = raw(name)
      if (text === undefined || text.trim() === '') {
        if (options.fromInput) return firstInput(inputs, name)
        return undefined
      }
      const keypath = wholeVarExpression(text)
      if (keypath === undefined) return text
      return wrapVarError(name, () => getVar(vars, keypath))
    },
    json(name, options = {}) {
      const text = raw(name)
      if (text === undefined || text.trim() === '') return undefined
      const keypath = wholeVarExpression(text)
      if (keypath !== undefined) return wrapVarError(name, () => getVar(vars, keypath))
      return wrapVarError(name, () =>
        jsonWithVarExpressions(text, vars, options.tolerateErrors ?? false),
      )
    },
    inputValues(maxErrors = 0) {
      const failed = inputs.filter((input) => !input.ok)
      if (failed.length > maxErrors)
        throw new TaskError(
          `${failed.length} of ${inputs.length} inputs failed (${describeFailures(failed)})`,
        )
      return inputs.flatMap((input) => (input.ok ? [input.value] : []))
    },
  }
}

function firstInput(inputs: readonly TaskInput[], name: string): unknown {
  const input = inputs[0]
  if (input === undefined) throw new TaskError(`${name}: not given and the task has no input`)
  if (!input.ok)
    throw new TaskError(
      `${name}: input from ${input.from} failed: ${input.error.message}`,
      withCause(input.error),
    )
  return input.value
}

function wrapVarError(name: string, read: () => unknown): unknown {
  try {
    return read()
  } catch (error) {
    if (error instanceof VarError)
      throw new TaskError(`${name}: ${error.message}`, withCause(error))
    throw error
  }
}

/** Options that keep the kind and retryable flag of the error a TaskError wraps. */
export function withCause(cause: unknown): Partial<FeedrunnerErrorOptions> {
  return { kind: errorKindOf(cause), retryable: isRetryable(cause), cause }
}

function describeFailures(failed: readonly TaskInput[]): string {
  return failed.map((input) => `${input.from}: ${input.ok ? '' : input.error.message}`).join('; ')
}

/** The attribute as text (a variable's value is stringified), or a TaskError naming it. */
export function requireString(
  task: TaskRun,
  name: string,
  options?: { fromInput?: boolean },
): string {
  const value = task.value(name, options)
  if (value === undefined || value === null) throw new TaskError(`${name} is required`)
  if (typeof value === 'string') return value
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean')
    return String(value)
  throw new TaskError(
    `${name} must be text, got ${Array.isArray(value) ? 'an array' : typeof value}`,
  )
}

/** Chainlink's boolean attributes (Go's ParseBool: true, 1, t, false, 0, f, ...), or a boolean variable. */
export function optionalBoolean(task: TaskRun, name: string, fallback: boolean): boolean {
  const value = task.value(name)
  if (value === undefined) return fallback
  if (typeof value === 'boolean') return value
  const parsed = typeof value === 'string' ? parseBoolText(value.trim()) : undefined
  if (parsed !== undefined) return parsed
  throw new TaskError(`${name} must be true or false, got ${JSON.stringify(value)}`)
}
