import { dirname, join, resolve } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { lastChars, startOwnedProcess, type OwnedProcess } from './process.ts'

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..')
// From the project root, not the cwd: tests and the bench may be started from anywhere.
export const FEEDRUNNER_BIN = join(projectRoot, 'bin/feedrunner.js')

/** How much of each stream the ready check looks at: a ready line split across chunks still falls inside it. */
const READY_WINDOW_CHARS = 4_096
/** How much output an error message quotes. */
const ERROR_OUTPUT_CHARS = 3_000
/** How long to wait after an early exit for the output still in the pipes (the crash's stack trace). */
const OUTPUT_DRAIN_MS = 1_000

/** A `bin/feedrunner.js <part>` child process; it is SIGKILLed if this process exits before stopping it. */
export type FeedrunnerProcess = OwnedProcess

export interface FeedrunnerProcessOptions {
  /** Names the part in error messages. */
  name: string
  /** The arguments of `bin/feedrunner.js`, e.g. `['worker']` or `['feeds', 'serve', '--port', '4567']`. */
  args: readonly string[]
  /** Added to this process's environment. */
  env?: Record<string, string>
  /** What the part prints (on stdout or stderr) once it serves. */
  ready: RegExp | string
  /** The feedrunner CLI to run; this checkout's by default (the bench's `--against` runs another's). */
  bin?: string
  /** Node options before the script, e.g. `--cpu-prof`. */
  nodeArgs?: readonly string[]
  /** How much output `output()` keeps, from the end; everything by default (secret scans read all of it). */
  keepOutputChars?: number
  readyTimeoutMs?: number
  /** How long `stop()` waits after SIGTERM before SIGKILL. */
  stopGraceMs?: number
}

/** Starts `bin/feedrunner.js <args>` and resolves once it printed its ready line; rejects (and stops it) if it does not. */
export async function startFeedrunnerProcess(
  options: FeedrunnerProcessOptions,
): Promise<FeedrunnerProcess> {
  const {
    name,
    args,
    env = {},
    ready,
    bin = FEEDRUNNER_BIN,
    nodeArgs = [],
    keepOutputChars = Number.POSITIVE_INFINITY,
    readyTimeoutMs = 60_000,
    stopGraceMs = 10_000,
  } = options
  const part = startOwnedProcess(name, process.execPath, [...nodeArgs, bin, ...args], {
    env: { ...process.env, ...env },
    keepOutputChars,
    stopGraceMs,
  })
  try {
    await waitForReady(part, readyTest(ready), readyTimeoutMs)
  } catch (error) {
    await part.stop()
    throw new Error(
      `${name}: ${error instanceof Error ? error.message : String(error)}; its last output:\n${lastChars(part.output(), ERROR_OUTPUT_CHARS)}`,
    )
  }
  return part
}

/** A test for the ready line. A RegExp's g or y flag would make `test` resume from its last match and miss it. */
export function readyTest(ready: RegExp | string): (text: string) => boolean {
  if (typeof ready === 'string') return (text) => text.includes(ready)
  const pattern = new RegExp(ready.source, ready.flags.replace(/[gy]/g, ''))
  return (text) => pattern.test(text)
}

/** Resolves once `isReady` holds for the recent text of stdout or stderr; rejects on exit or after `timeoutMs`. */
export function waitForReady(
  part: OwnedProcess,
  isReady: (text: string) => boolean,
  timeoutMs: number,
): Promise<void> {
  const { child } = part
  // Streams are checked apart: chunks of one interleaved with the other's could split the line.
  const streams = [child.stdout, child.stderr].filter((stream) => stream !== null)
  const closed = new Promise<void>((resolveClose) => child.once('close', () => resolveClose()))
  return new Promise<void>((resolveReady, rejectReady) => {
    let settled = false
    const listeners = streams.map((stream) => {
      let recent = ''
      const onData = (chunk: Buffer) => {
        recent = lastChars(recent + chunk.toString('utf8'), READY_WINDOW_CHARS)
        if (isReady(recent)) settle()
      }
      stream.on('data', onData)
      return () => stream.off('data', onData)
    })
    const timer = setTimeout(() => settle(new Error(`not ready within ${timeoutMs} ms`)), timeoutMs)
    void part.exited.then(async ({ code, signal }) => {
      if (settled) return
      // 'exit' can come before the last output is read; the reason it exited is usually in it.
      await Promise.race([closed, delay(OUTPUT_DRAIN_MS, undefined, { ref: false })])
      settle(new Error(`exited (${code ?? signal}) before it was ready`))
    })
    function settle(error?: Error) {
      if (settled) return
      settled = true
      clearTimeout(timer)
      for (const removeListener of listeners) removeListener()
      if (error) rejectReady(error)
      else resolveReady()
    }
  })
}
