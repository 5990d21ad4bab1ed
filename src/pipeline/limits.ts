import { PIPELINE_BOUND_DEFAULTS } from '../config/pipeline-bounds.ts'
import type { Settings } from '../config/settings.ts'

/** What the pipeline bounds for every run, from the settings (docs/security.md). */
export interface PipelineLimits {
  httpMaxResponseBytes: number
  bridgeMaxResponseBytes: number
  jsonMaxDepth: number
  /** Values one decode may build (src/pipeline/decode-budget.ts). */
  decodeMaxNodes: number
  /** Values one path evaluation may visit and return (src/reduce/path-budget.ts). */
  pathMaxValues: number
}

type LimitSettings = Pick<
  Settings,
  | 'HTTP_TASK_MAX_RESPONSE_BYTES'
  | 'BRIDGE_MAX_RESPONSE_BYTES'
  | 'JSON_MAX_DEPTH'
  | 'DECODE_MAX_NODES'
  | 'PATH_MAX_VALUES'
>

export function pipelineLimits(settings: LimitSettings): PipelineLimits {
  return {
    httpMaxResponseBytes: settings.HTTP_TASK_MAX_RESPONSE_BYTES,
    bridgeMaxResponseBytes: settings.BRIDGE_MAX_RESPONSE_BYTES,
    jsonMaxDepth: settings.JSON_MAX_DEPTH,
    decodeMaxNodes: settings.DECODE_MAX_NODES,
    pathMaxValues: settings.PATH_MAX_VALUES,
  }
}

/** The settings' defaults, for runs given no limits (tests, tools). */
export const DEFAULT_PIPELINE_LIMITS: PipelineLimits = pipelineLimits(PIPELINE_BOUND_DEFAULTS)
