import type { Redis } from 'ioredis'
import { z } from 'zod'
import type { SerialisedError } from '../config/errors.ts'
import { serialisedErrorSchema } from '../config/stored-errors.ts'
import { luaScriptFile } from '../queue/lua-script.ts'
import { scanKeys } from '../queue/scan-keys.ts'
import type { RunTrigger } from '../pipeline/index.ts'

/**
 * Where a request is in its life. `fulfilled`, `errored`, `refused` and `cancelled` are final: once a
 * run reaches one, nothing moves it again (a late retry or a second process cannot undo it).
 */
export const RUN_STATES = [
  'received',
  'running',
  'sent',
  'fulfilled',
  'errored',
  'refused',
  'cancelled',
] as const
export type RunState = (typeof RUN_STATES)[number]
export const FINAL_RUN_STATES: readonly RunState[] = [
  'fulfilled',
  'errored',
  'refused',
  'cancelled',
]

export interface TaskRecord {
  id: string
  type: string
  /** JSON-safe rendering of the task's value (bigints as strings). */
  output?: unknown
  error?: string
  /** The task's failure as stored errors are ({kind, message, retryable, causes}). */
  failure?: SerialisedError
  ms?: number
}

export interface RunRecord {
  /** The run's id: a request's id, or one derived from what else started it (a cron job's tick). */
  requestId: string
  /** What started the run: an OracleRequest (`request`, also when absent), a tick, a call. */
  trigger?: RunTrigger
  /** A tick's run: the tick, epoch milliseconds by Redis's clock. */
  tickAt?: number
  /** A call's run: who called (an external initiator's name, or `operator`). */
  caller?: string
  chainId: number
  operator: string
  job: string
  externalJobId: string
  state: RunState
  /** Why a run was refused or errored, in words an operator can act on: root cause first, then where. */
  reason?: string
  /** The same failure as an error with its kind (reviveError gives it back as one). */
  failure?: SerialisedError
  requester: string
  payment: string
  blockNumber: number
  requestTxHash: string
  txHash?: string
  tasks?: TaskRecord[]
  /** Callback and expiry of the request, for what the requester can do while it is open. */
  callbackAddr?: string
  callbackFunctionId?: string
  /** Unix seconds after which the consumer may cancel the request and take its payment back. */
  cancelExpiration?: string
  /**
   * How many times the request was made again (a reorg moved it to another block, so its
   * cancelExpiration, and the fulfilment that matches it, changed): each round runs anew.
   */
  round?: number
  /** Set when its runs crashed RUN_MAX_CRASHES times: not run again by itself (`runs replay` may). */
  quarantined?: boolean
  /** Each `runs replay` of this run, oldest first, with the reason the run had errored with. */
  replays?: RunReplay[]
  /** When the run entered each state: epoch milliseconds by Redis's clock (update-run.lua). */
  times: Partial<Record<RunState, number>>
}

export interface RunReplay {
  /** Epoch milliseconds. */
  at: number
  previousReason?: string
}

/**
 * A write's change to a run. With `tasksFrom`, `tasks` replaces the stored tasks from that index on and
 * the ones before it are kept: a run's last write sends only the tasks its `sent` write did not store
 * (the outputs are most of a record's bytes). A run that Redis lost meanwhile is written again with
 * the tasks the patch has.
 */
export type RunPatch = Partial<RunRecord> & { state?: RunState; tasksFrom?: number }

/** What a write answers: enough to tell where the run stands, not the whole record (tasks and all). */
export type RunSummary = Pick<RunRecord, 'requestId' | 'state'> &
  Partial<Pick<RunRecord, 'job' | 'txHash' | 'reason' | 'round'>>

const runSummarySchema = z.object({
  requestId: z.string(),
  state: z.enum(RUN_STATES),
  job: z.string().optional(),
  txHash: z.string().optional(),
  reason: z.string().optional(),
  round: z.number().int().nonnegative().optional(),
})

const RUN_TTL_SECONDS = 7 * 24 * 3600
const RECENT_RUNS_KEPT = 10_000
/** One create in this many trims the index of recent runs (chosen by the request id, uniform). */
const TRIM_EVERY = 64

/**
 * Merges a patch into the stored run unless it is final (records/update-run.lua, where the modes are
 * told), in one atomic step, so two processes racing on the same request cannot move a finished run
 * backwards; answers a summary.
 */
const UPDATE_RUN = luaScriptFile(new URL('./records/update-run.lua', import.meta.url), {
  keys: ['run', 'index'],
  args: ['patch', 'ttl', 'run_id', 'kept', 'mode', 'trim'],
})

/** Moves an errored run back to `received` for a replay (records/reopen-run.lua). */
const REOPEN_RUN = luaScriptFile(new URL('./records/reopen-run.lua', import.meta.url), {
  keys: ['run', 'index'],
  args: ['ttl', 'run_id'],
})

/**
 * Run records in Redis: one JSON value per request plus a time-ordered index of recent runs, shared
 * by every chain. A run's id is `<chain id>:<request id>`: two chains may well carry one request id
 * (a consumer deployed at the same address by the same account asks with the same nonce on both).
 *
 * A store bound to a chain (the runner's) takes request ids; an unbound one (status, `runs show`)
 * takes and answers run ids, and reads every chain's runs.
 */
export class RunStore {
  constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
    readonly chainId?: number,
  ) {}

  /** The run id of a request on this store's chain; an unbound store takes run ids as they are. */
  private runId(requestId: string): string {
    const id = requestId.toLowerCase()
    return this.chainId === undefined ? id : `${this.chainId}:${id}`
  }

  private runKey(requestId: string): string {
    return `${this.prefix}:run:${this.runId(requestId)}`
  }

  private indexKey(): string {
    return `${this.prefix}:runs`
  }

  /** Creates or updates a run; a run in a final state is left unchanged. Answers where the run stands now. */
  update(requestId: string, patch: RunPatch): Promise<RunSummary> {
    return this.write(requestId, patch, 'unless-final')
  }

  /**
   * Sets what the chain says of a run, final state or not: a fulfilment mined while the sender saw an
   * error (a node that went away as it was mined) makes an `errored` run `fulfilled` (the reconciler).
   */
  settleFromChain(
    requestId: string,
    patch: Partial<RunRecord> & { state: RunState },
  ): Promise<RunSummary> {
    return this.write(requestId, patch, 'chain')
  }

  /**
   * Creates the run only when there is none yet (a request seen again keeps the run it has), or
   * opens it in a new round when the request was made again with another cancelExpiration (a reorg
   * moved it): the summary's `round` says which.
   */
  create(requestId: string, record: Partial<RunRecord> & { state: RunState }): Promise<RunSummary> {
    return this.write(requestId, record, 'if-absent')
  }

  private async write(
    requestId: string,
    patch: RunPatch,
    mode: 'unless-final' | 'if-absent' | 'chain',
  ): Promise<RunSummary> {
    // The script stamps the state it moves to with Redis's time (update-run.lua).
    const answer = (await UPDATE_RUN.run(
      this.redis,
      { run: this.runKey(requestId), index: this.indexKey() },
      {
        patch: JSON.stringify({ requestId: requestId.toLowerCase(), times: {}, ...patch }),
        ttl: RUN_TTL_SECONDS,
        run_id: this.runId(requestId),
        kept: RECENT_RUNS_KEPT,
        mode,
        trim: trimsIndex(requestId) ? '1' : '0',
      },
    )) as string
    return runSummarySchema.parse(JSON.parse(answer))
  }

  /** An errored run back to `received` for a replay; answers where it stands and the replay number (0: not moved). */
  async reopenForReplay(
    requestId: string,
  ): Promise<{ run: RunSummary; replay: number } | undefined> {
    const answer = (await REOPEN_RUN.run(
      this.redis,
      { run: this.runKey(requestId), index: this.indexKey() },
      { ttl: RUN_TTL_SECONDS, run_id: this.runId(requestId) },
    )) as string | null
    if (answer === null) return undefined
    const parsed = JSON.parse(answer) as { replay: number }
    return { run: runSummarySchema.parse(parsed), replay: parsed.replay }
  }

  async get(requestId: string): Promise<RunRecord | undefined> {
    const stored = await this.redis.get(this.runKey(requestId))
    return stored ? decodeRun(stored) : undefined
  }

  /**
   * The runs whose request id starts with `idPrefix` (hex, with or without 0x), at most `limit`:
   * one answer means the prefix is unique. A bound store answers request ids, an unbound one run
   * ids (`<chain id>:<request id>`, any chain).
   */
  async findByPrefix(idPrefix: string, limit = 2): Promise<string[]> {
    const hex = idPrefix.toLowerCase().replace(/^0x/, '')
    if (!/^[0-9a-f]*$/.test(hex)) return []
    const base = this.runKey('')
    const pattern = this.chainId === undefined ? `${base}*:0x${hex}*` : `${base}0x${hex}*`
    // Every master of a cluster: a SCAN through the Cluster sees one node's runs.
    const keys = await scanKeys(this.redis, pattern, { count: 1000, limit })
    return keys.map((key) => key.slice(base.length))
  }

  /**
   * Opens an unfulfilled run again (its request is still open on chain and is run anew after Redis
   * lost its state): a record a process of the lost generation wrote must not stop the new run.
   */
  async reopen(requestId: string): Promise<void> {
    const run = await this.get(requestId)
    // A quarantined run stays so: only `runs replay` runs it again.
    if (
      !run ||
      run.quarantined ||
      run.state === 'fulfilled' ||
      run.state === 'cancelled' ||
      !isFinal(run.state)
    )
      return
    await this.write(
      requestId,
      {
        state: 'received',
        reason: `run again after Redis lost its state (it had said: ${run.reason ?? run.state})`,
      },
      'chain',
    )
  }

  /**
   * Every run created since `sinceMs` (epoch ms), newest first, a page of `pageSize` at a time; a
   * bound store's chain's only. The index holds RECENT_RUNS_KEPT runs at most.
   */
  async *pagesSince(sinceMs: number, pageSize = 500): AsyncGenerator<RunRecord[]> {
    for (let offset = 0; ; offset += pageSize) {
      const ids = await this.redis.zrevrangebyscore(
        this.indexKey(),
        '+inf',
        sinceMs,
        'LIMIT',
        offset,
        pageSize,
      )
      const own =
        this.chainId === undefined ? ids : ids.filter((id) => id.startsWith(`${this.chainId}:`))
      if (own.length > 0) yield await this.load(own)
      if (ids.length < pageSize) return
    }
  }

  /** Runs created since `sinceMs` (epoch ms), oldest first, at most `limit`; a bound store's chain's only. */
  async createdSince(sinceMs: number, limit = 1_000): Promise<RunRecord[]> {
    const ids = await this.redis.zrangebyscore(this.indexKey(), sinceMs, '+inf', 'LIMIT', 0, limit)
    const own =
      this.chainId === undefined ? ids : ids.filter((id) => id.startsWith(`${this.chainId}:`))
    return this.load(own)
  }

  /** When the reconciler last checked unsettled runs against the chain (epoch ms), if ever. */
  async reconciledAt(): Promise<number | undefined> {
    const at = await this.redis.get(this.reconciledKey())
    return at ? Number(at) : undefined
  }

  async markReconciled(at: number): Promise<void> {
    await this.redis.set(this.reconciledKey(), String(at))
  }

  /** Each chain's reconciler checks its own runs. */
  private reconciledKey(): string {
    return `${this.prefix}:reconciled-at${this.chainId === undefined ? '' : `:${this.chainId}`}`
  }

  /** The newest runs first (by when they were created). */
  async recent(limit = 20): Promise<RunRecord[]> {
    return this.load(await this.redis.zrevrange(this.indexKey(), 0, limit - 1))
  }

  /** The stored runs of `ids` (run ids, as the index holds them), in their order (a run expired meanwhile is left out). */
  private async load(ids: string[]): Promise<RunRecord[]> {
    if (ids.length === 0) return []
    const values = await this.redis.mget(ids.map((id) => `${this.prefix}:run:${id}`))
    return values.filter((value): value is string => value !== null).map(decodeRun)
  }
}

/** The chain and the request of a run id (`<chain id>:<request id>`); a bare request id has no chain. */
export function splitRunId(runId: string): { chainId: number | undefined; requestId: string } {
  const [chain, requestId] = runId.split(':')
  return requestId === undefined
    ? { chainId: undefined, requestId: runId }
    : { chainId: Number(chain), requestId }
}

/** Whether this run's creation trims the index: a request id is a hash, so its last byte is uniform. */
function trimsIndex(requestId: string): boolean {
  return Number.parseInt(requestId.slice(-2), 16) % TRIM_EVERY === 0
}

function decodeRun(stored: string): RunRecord {
  const record = JSON.parse(stored) as RunRecord
  // cjson encodes an empty table as {}; task lists must stay arrays.
  if (record.tasks && !Array.isArray(record.tasks)) record.tasks = []
  if (record.failure) record.failure = storedError(record.failure)
  for (const task of record.tasks ?? []) if (task.failure) task.failure = storedError(task.failure)
  if (record.replays && !Array.isArray(record.replays)) record.replays = []
  return record
}

/** A stored failure read back; one that does not parse (an older record) is left out. */
function storedError(value: unknown): SerialisedError | undefined {
  const parsed = serialisedErrorSchema.safeParse(value)
  return parsed.success ? parsed.data : undefined
}

export function isFinal(state: RunState): boolean {
  return FINAL_RUN_STATES.includes(state)
}
