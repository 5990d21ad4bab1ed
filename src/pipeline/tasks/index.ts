import type { TaskDefinition } from '../task.ts'
import { any } from './any.ts'
import { bridge } from './bridge.ts'
import { cborparse } from './cborparse.ts'
import { divide } from './divide.ts'
import { ethabidecodelog } from './ethabidecodelog.ts'
import { ethabiencode } from './ethabiencode.ts'
import { ethcall } from './ethcall.ts'
import { ethtx } from './ethtx.ts'
import { hexencode } from './hexencode.ts'
import { http } from './http.ts'
import { jsonparse } from './jsonparse.ts'
import { lowercase } from './lowercase.ts'
import { mean } from './mean.ts'
import { median } from './median.ts'
import { mode } from './mode.ts'
import { multiply } from './multiply.ts'
import { sum } from './sum.ts'
import { uppercase } from './uppercase.ts'

/** Every task type the pipeline knows, by its DOT `type`. */
export const TASK_TYPES: ReadonlyMap<string, TaskDefinition> = new Map(
  [
    ethabidecodelog,
    cborparse,
    bridge,
    http,
    jsonparse,
    multiply,
    divide,
    ethabiencode,
    ethtx,
    ethcall,
    any,
    median,
    mean,
    mode,
    sum,
    lowercase,
    uppercase,
    hexencode,
  ].map((task) => [task.type, task]),
)
