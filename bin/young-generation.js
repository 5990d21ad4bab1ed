// Every feedrunner process gets the young generation Node.js 22 gives it: a semi-space of at most
// 16 MB. Node.js 24's V8 raised its default fourfold (--scavenger-max-new-space-capacity-mb from 8 to
// 32, doubled without pointer compression: 128 MB of new space), and a runner under load held about
// 90 MB more RSS for it, nearly all of it garbage waiting for a scavenge (docs/performance.md). V8
// sizes the young generation when the process starts; v8.setFlagsFromString comes too late. So a
// process started without the size is replaced, before anything else runs, by one started with it:
// process.execve, the same PID, so a supervisor, a container or a test sees one process. A size the
// operator gave (on the command line or in NODE_OPTIONS) is kept as it is.
export const SEMI_SPACE_MB = 16
export const SEMI_SPACE_FLAG = `--max-semi-space-size=${SEMI_SPACE_MB}`

/** The first Node.js major whose V8 gives a larger young generation than SEMI_SPACE_MB. */
const LARGER_FROM_MAJOR = 24

/**
 * The argv to replace this process with (its node options first, the pinned size among them), or
 * undefined when it runs with the size already: Node.js before 24, or a size the operator chose.
 */
export function argvWithYoungGeneration(proc = process) {
  const major = Number(/^v?(\d+)\./.exec(proc.version)?.[1] ?? Number.NaN)
  if (!(major >= LARGER_FROM_MAJOR) || typeof proc.execve !== 'function') return undefined
  const given = [...proc.execArgv, ...(proc.env.NODE_OPTIONS ?? '').split(/\s+/)]
  if (given.some((option) => /^--max-semi-space-size(=|$)/.test(option))) return undefined
  return [proc.execPath, SEMI_SPACE_FLAG, ...proc.execArgv, ...proc.argv.slice(1)]
}
