import { z } from 'zod'
import { PIPELINE_BOUND_DEFAULTS as BOUND } from './pipeline-bounds.ts'
import { positiveInt, withDefault } from './settings-kit.ts'

const count = z.coerce.number().int().nonnegative()

/**
 * What a requester or a source can make feedrunner hold: body caps (read while the body streams),
 * parse bounds, the size of what is kept and printed, per-requester admission (docs/security.md).
 */
export const boundSettings = {
  HTTP_TASK_MAX_RESPONSE_BYTES: withDefault(positiveInt, BOUND.HTTP_TASK_MAX_RESPONSE_BYTES, {
    group: 'bounds',
    unit: 'bytes',
    description:
      "Largest body an http task reads; the connection is closed at the cap and the run errors. Chainlink's [JobPipeline.HTTPRequest] MaxSize default. A task's literal maxResponseBytes overrides it.",
  }),
  BRIDGE_MAX_RESPONSE_BYTES: withDefault(positiveInt, BOUND.BRIDGE_MAX_RESPONSE_BYTES, {
    group: 'bounds',
    unit: 'bytes',
    description:
      "Largest body a bridge task reads. The largest answer of the shipped data set is 3.4 kB, about twice that through the adapter (test/feeds/answer-size.test.ts); a blockchain answer carries a transaction's input and every transfer of it (~100 kB for the largest on mainnet). A task's literal maxResponseBytes overrides it.",
  }),
  FETCH_MAX_RESPONSE_BYTES: withDefault(positiveInt, 2 * 1024 * 1024, {
    group: 'bounds',
    unit: 'bytes',
    description: 'Largest body a fetch worker reads from the feed service.',
  }),
  RPC_MAX_RESPONSE_BYTES: withDefault(positiveInt, 64 * 1024 * 1024, {
    group: 'bounds',
    unit: 'bytes',
    description:
      'Largest JSON-RPC answer read from a node, by the sender (a batch of receipts), the listener and recovery (a page of logs), over HTTP or WebSocket; the connection is closed at the cap.',
  }),
  JSON_MAX_DEPTH: withDefault(positiveInt.max(10_000), BOUND.JSON_MAX_DEPTH, {
    group: 'bounds',
    unit: 'levels',
    description:
      'Deepest nesting of arrays and objects jsonparse and the fetch worker accept (feed answers nest 4 levels).',
  }),
  DECODE_MAX_NODES: withDefault(positiveInt, BOUND.DECODE_MAX_NODES, {
    group: 'bounds',
    unit: 'values',
    description:
      'Most values one decode may build (cborparse, jsonparse, ethabidecodelog, the fetch worker): a map, an array, a number or a string each count one, a string one more per 32 bytes. Counted before the values are built, so references that expand (CBOR shared values, ABI offsets pointing at one place) cannot. The largest answer of the shipped data set builds 195 (test/feeds/answer-size.test.ts).',
  }),
  PATH_MAX_VALUES: withDefault(positiveInt, BOUND.PATH_MAX_VALUES, {
    group: 'bounds',
    unit: 'values',
    description:
      "Most values one path evaluation may visit and return (jsonparse, the adapter's path): each step and each value walked counts one, and when a path returns several matches, each counts with everything in it. Past it the path fails naming this setting. A path that names its fields visits a few; `$..price` over the largest answer of the shipped data set about 600; `$` and forty `..*` over a 60-level document would never end.",
  }),
  RUN_ISOLATE_THREADS: withDefault(positiveInt.max(64), 2, {
    group: 'bounds',
    unit: 'threads',
    description:
      "Isolates (worker threads) a runner process runs pure pipeline tasks in (decoders, jsonparse, arithmetic, encoders), one task at a time each, so a task's memory and time are bounded apart from the process's. Shared fairly between requesters: a free one goes to the waiting requester that holds the fewest; when these are all held, one more is started for a requester that holds none and kept (up to twice this many for several such requesters), and one that dies is replaced at once.",
  }),
  RUN_ISOLATE_MEMORY_MB: withDefault(positiveInt.min(32), 256, {
    group: 'bounds',
    unit: 'MB',
    description:
      'Heap of each isolate: a task that builds past it ends its isolate (a crash of its run), not the runner. Keep it well above the largest body a task reads (the caps above).',
  }),
  RUN_MAX_CRASHES: withDefault(positiveInt, 2, {
    group: 'bounds',
    unit: 'crashes',
    description:
      "A run (a request's, a cron tick's, a webhook call's) that crashed this many times (its isolate died under a task, or its runner process died or stalled while running it) is quarantined: recorded errored with that cause, never run again by itself; `feedrunner runs replay` runs a request's by hand, the next tick or call runs a push job again.",
  }),
  TASK_OUTPUT_MAX_CHARS: withDefault(positiveInt, 4_096, {
    group: 'bounds',
    unit: 'characters',
    description:
      'Characters of one task output or error kept in a run record and printed by jobs run; the rest is cut with a note.',
  }),
  REQUESTER_MAX_CONCURRENT_RUNS: withDefault(count, 8, {
    group: 'bounds',
    unit: 'runs',
    description:
      'Runs one requester address may have in progress on one chain, counted in Redis across every runner process of the deployment; more are refused with the reason. A crashed process gives its slots back within RUNNER_LOCK_MS (at least 5 s). 0 = no limit (the dev stack sets 0).',
  }),
  REQUESTER_MAX_REQUESTS_PER_MINUTE: withDefault(count, 120, {
    group: 'bounds',
    unit: 'requests/min',
    description:
      'Requests one requester address may start on one chain in any 60 s, counted in Redis across every runner process of the deployment; more are refused with the reason. 0 = no limit (the dev stack sets 0).',
  }),
}
