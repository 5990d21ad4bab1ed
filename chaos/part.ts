import { mkdirSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as delay } from 'node:timers/promises'
import { FEEDRUNNER_BIN, readyTest, waitForReady } from '../src/dev/feedrunner-process.ts'
import { lastChars, startOwnedProcess, type OwnedProcess } from '../src/dev/process.ts'
import type { PartKind, Signal } from './schedule.ts'

/** What each command prints once it serves (the CLI's own ready lines). */
const READY: Record<PartKind, string> = {
  runner: 'feedrunner runner started',
  start: 'feedrunner runner watching',
  adapter: 'feedrunner adapter listening',
  worker: 'feedrunner fetch workers running',
  feeds: 'feed service listening',
}

/** Every process must be gone this long after SIGTERM (the bound); then it is SIGKILLed. */
export const SIGTERM_BOUND_MS = 10_000
/** A start that does not print its ready line within this long is tried again. */
const READY_TIMEOUT_MS = 45_000
/** How long a part may take to come up in all, retries included (say, while Redis is away). */
const START_BOUND_MS = 90_000

/** How a process ended after a signal. */
export interface StopOutcome {
  part: string
  signal: Signal
  /** From the signal to the process's exit. */
  ms: number
  code: number | null
  /** It was still running SIGTERM_BOUND_MS after SIGTERM and was SIGKILLed. */
  overran: boolean
  /** What it printed last, when it overran, exited with an error, or had died. */
  tail?: string
  /** It had ended by itself before the harness stopped it (a crash: an uncaught error, say). */
  died?: boolean
}

export interface PartSpec {
  name: string
  kind: PartKind
  /** `bin/feedrunner.js` arguments. */
  args: readonly string[]
  env: Record<string, string>
  clockOffsetSeconds: number
}

/** Node processes started here (faketime's children included), SIGKILLed if the harness dies. */
const livePids = new Set<number>()
/**
 * How much of each part's output is kept: a schedule's whole log (a runner writes about a megabyte
 * in a long one), so a violation that a replay does not bring back is still told in full.
 */
export const KEPT_OUTPUT_CHARS = 8_000_000
/** The parts' working directory: an empty folder under the ignored .cache/, so no `.env` is read there. */
const PARTS_CWD = join(dirname(fileURLToPath(import.meta.url)), '..', '.cache', 'chaos-cwd')
process.once('exit', () => {
  for (const pid of livePids) {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // gone already
    }
  }
})

/**
 * One feedrunner process of the stack, started again after each fault. With a clock offset it runs
 * under Debian's `faketime`, which forks: the PID spawned is the wrapper and node is its child, so
 * signals go to the child (the wrapper exits with it).
 */
export class Part {
  private process: OwnedProcess | undefined
  private nodePid: number | undefined
  /** Output of the runs before this one, kept for diagnosis. */
  private earlier = ''
  /** The harness stopped the process it started last (else one found gone died by itself). */
  private stoppedByHarness = true

  constructor(readonly spec: PartSpec) {}

  get name(): string {
    return this.spec.name
  }

  /** The node process's PID (faketime's child under a clock offset), once started. */
  get pid(): number | undefined {
    return this.nodePid
  }

  get running(): boolean {
    const child = this.process?.child
    return child !== undefined && child.exitCode === null && child.signalCode === null
  }

  output(chars = 6_000): string {
    return lastChars(this.earlier + (this.process?.output() ?? ''), chars)
  }

  /** Starts the process and waits for its ready line, trying again while it exits early. */
  async start(): Promise<void> {
    const deadline = Date.now() + START_BOUND_MS
    for (let attempt = 1; ; attempt++) {
      try {
        await this.startOnce()
        return
      } catch (error) {
        // What the part printed last goes with the error: a start that fails only now and then
        // (under a moved clock, say) is seen once, and its reason must not go with the process.
        if (Date.now() > deadline)
          throw new Error(
            `${this.name} did not start within ${START_BOUND_MS} ms (${attempt} attempts): ${(error as Error).message}\n` +
              `its last output:\n${this.output(3_000) || '(none)'}`,
          )
        await delay(1_000)
      }
    }
  }

  private async startOnce(): Promise<void> {
    mkdirSync(PARTS_CWD, { recursive: true })
    this.earlier = lastChars(this.earlier + (this.process?.output() ?? ''), KEPT_OUTPUT_CHARS)
    const { args, env, clockOffsetSeconds, kind } = this.spec
    const nodeArgs = [process.execPath, FEEDRUNNER_BIN, ...args]
    const offset = `${clockOffsetSeconds >= 0 ? '+' : ''}${clockOffsetSeconds}s`
    const [command, commandArgs] =
      clockOffsetSeconds === 0
        ? [nodeArgs[0]!, nodeArgs.slice(1)]
        : ['faketime', ['-f', offset, ...nodeArgs]]
    const started = startOwnedProcess(this.name, command, commandArgs, {
      // The schedule's settings and nothing else: neither the caller's environment nor a .env file
      // in the checkout (feedrunner reads one from its working directory) may change a replay.
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        ...env,
        FAKETIME_DONT_FAKE_MONOTONIC: '1',
      },
      cwd: PARTS_CWD,
      keepOutputChars: KEPT_OUTPUT_CHARS,
      // Its own group, so the harness's end takes faketime's node child with the wrapper.
      ownProcessGroup: true,
    })
    this.process = started
    this.stoppedByHarness = false
    try {
      this.nodePid = clockOffsetSeconds === 0 ? started.pid : await childOf(started)
      livePids.add(this.nodePid)
      await waitForReady(started, readyTest(READY[kind]), READY_TIMEOUT_MS)
    } catch (error) {
      // A start that did not come up is tried again, and told as a start failure if it never does.
      this.stoppedByHarness = true
      await this.stop('SIGKILL')
      throw error
    }
  }

  /**
   * Sends `signal` to the node process and waits until it is gone; after SIGTERM_BOUND_MS it is
   * SIGKILLed and the outcome says it overran. Undefined when it was not running because the harness
   * stopped it before; a process found gone that the harness did not stop died by itself (`died`).
   */
  async stop(signal: Signal): Promise<StopOutcome | undefined> {
    const started = this.process
    const pid = this.nodePid
    const began = Date.now()
    const outcome = (code: number | null, ms: number): StopOutcome => {
      const overran = signal === 'SIGTERM' && ms >= SIGTERM_BOUND_MS
      const failed = signal === 'SIGTERM' && code !== 0
      return {
        part: this.name,
        signal,
        ms,
        code,
        overran,
        ...(overran || failed ? { tail: this.output(3_000) } : {}),
      }
    }
    const diedByItself = !this.stoppedByHarness
    this.stoppedByHarness = true
    if (!started || pid === undefined) return undefined
    if (!this.running)
      return diedByItself
        ? {
            ...outcome(started.child.exitCode, 0),
            died: true,
            tail: this.output(3_000),
          }
        : undefined
    signalPid(pid, signal)
    const timer = setTimeout(() => signalPid(pid, 'SIGKILL'), SIGTERM_BOUND_MS)
    const exit = await started.exited
    clearTimeout(timer)
    livePids.delete(pid)
    return outcome(exit.code, Date.now() - began)
  }
}

function signalPid(pid: number, signal: Signal): void {
  try {
    process.kill(pid, signal)
  } catch {
    // it exited meanwhile
  }
}

/** The PID of faketime's child (the node process), once it has forked. */
async function childOf(wrapper: OwnedProcess): Promise<number> {
  const file = `/proc/${wrapper.pid}/task/${wrapper.pid}/children`
  for (let tries = 0; tries < 200; tries++) {
    const children = readChildren(file)
    if (children[0] !== undefined) return children[0]
    if (wrapper.child.exitCode !== null) break
    await delay(10)
  }
  throw new Error(`faketime (pid ${wrapper.pid}) started no child: ${wrapper.output()}`)
}

function readChildren(file: string): number[] {
  try {
    return readFileSync(file, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}
