import type { TaskDefinition } from '../task.ts'
import { any } from './any.ts'
import { base64decode, base64encode } from './base64.ts'
import { cborparse } from './cborparse.ts'
import { conditional } from './conditional.ts'
import { divide } from './divide.ts'
import { ethabidecode } from './ethabidecode.ts'
import { ethabidecodelog } from './ethabidecodelog.ts'
import { ethabiencode } from './ethabiencode.ts'
import { ethabiencode2 } from './ethabiencode2.ts'
import { fail } from './fail.ts'
import { hexdecode } from './hexdecode.ts'
import { hexencode } from './hexencode.ts'
import { jsonparse } from './jsonparse.ts'
import { length } from './length.ts'
import { lessthan } from './lessthan.ts'
import { lookup } from './lookup.ts'
import { lowercase } from './lowercase.ts'
import { mean } from './mean.ts'
import { median } from './median.ts'
import { memo } from './memo.ts'
import { merge } from './merge.ts'
import { mode } from './mode.ts'
import { multiply } from './multiply.ts'
import { sum } from './sum.ts'
import { uppercase } from './uppercase.ts'

/**
 * The pure task types, by their DOT `type`: those that run in an isolate (no `runsIn: 'main'`). An
 * isolate loads these alone, not the network tasks and their HTTP client and chain access (about 5
 * MB of each isolate's memory); tasks/index.ts adds the network tasks for the main thread.
 */
export const PURE_TASK_TYPES: ReadonlyMap<string, TaskDefinition> = new Map(
  [
    ethabidecodelog,
    cborparse,
    jsonparse,
    multiply,
    divide,
    ethabiencode,
    ethabiencode2,
    ethabidecode,
    any,
    median,
    mean,
    mode,
    sum,
    lowercase,
    uppercase,
    hexencode,
    hexdecode,
    base64encode,
    base64decode,
    length,
    lessthan,
    conditional,
    memo,
    merge,
    lookup,
    fail,
  ].map((task) => [task.type, task]),
)
