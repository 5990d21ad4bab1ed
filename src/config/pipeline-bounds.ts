/**
 * The defaults of the settings that bound every pipeline run, declared here for the settings schema
 * (settings-bounds.ts reads them) and for the pure tasks' own defaults (pipeline/limits.ts): an
 * isolate loads the tasks, and not the settings schema and zod with them (about 9 MB of its memory).
 */
export const PIPELINE_BOUND_DEFAULTS = {
  HTTP_TASK_MAX_RESPONSE_BYTES: 32 * 1024,
  BRIDGE_MAX_RESPONSE_BYTES: 256 * 1024,
  JSON_MAX_DEPTH: 64,
  DECODE_MAX_NODES: 100_000,
  PATH_MAX_VALUES: 100_000,
} as const
