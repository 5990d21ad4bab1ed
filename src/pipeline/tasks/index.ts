import type { TaskDefinition } from '../task.ts'
import { bridge } from './bridge.ts'
import { estimategaslimit } from './estimategaslimit.ts'
import { ethcall } from './ethcall.ts'
import { ethtx } from './ethtx.ts'
import { http } from './http.ts'
import { PURE_TASK_TYPES } from './pure.ts'

/**
 * Every task type the pipeline knows, by its DOT `type` (docs/job-specs.md's conformance table lists
 * each): the network tasks, which run on the main thread (`runsIn: 'main'`), and the pure ones.
 */
export const TASK_TYPES: ReadonlyMap<string, TaskDefinition> = new Map([
  ...[bridge, http, ethtx, ethcall, estimategaslimit].map((task): [string, TaskDefinition] => [
    task.type,
    task,
  ]),
  ...PURE_TASK_TYPES,
])
