import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'

/** How a child process ended: its exit code, or the signal that ended it. */
export interface ProcessExit {
  code: number | null
  signal: NodeJS.Signals | null
}

/** A child process this feedrunner started and must stop. */
export interface OwnedProcess {
  readonly name: string
  readonly pid: number
  readonly child: ChildProcess
  /** Recent stdout/stderr, for error messages when the process dies early. */
  output(): string
  /** Resolves once the process is gone. */
  readonly exited: Promise<ProcessExit>
  /** Sends `signal` at once (to its process group when it has one of its own). */
  kill(signal: NodeJS.Signals): void
  stop(signal?: NodeJS.Signals): Promise<void>
}

export interface OwnedProcessOptions extends SpawnOptions {
  /** How much of the output `output()` keeps, from the end; a caller that scans all of it passes Infinity. */
  keepOutputChars?: number
  /** How long `stop()` lets the process shut down cleanly before SIGKILL. */
  stopGraceMs?: number
  /**
   * A process group of its own (`detached`): a terminal's Ctrl-C, which signals the whole foreground
   * group, then reaches feedrunner alone, and feedrunner stops it after the parts that use it. A dev
   * stack's redis-server and anvil died with the Ctrl-C before its runner had stopped, which said
   * "Redis is not answering" on the way out.
   */
  ownProcessGroup?: boolean
}

const owned = new Set<OwnedProcess>()

/** Starts `command` and keeps its PID so `stopAll()` (and process exit) can stop it. */
export function startOwnedProcess(
  name: string,
  command: string,
  args: readonly string[],
  options: OwnedProcessOptions = {},
): OwnedProcess {
  const {
    keepOutputChars = 8_000,
    stopGraceMs = 5_000,
    ownProcessGroup = false,
    ...spawnOptions
  } = options
  const child = spawn(command, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(ownProcessGroup ? { detached: true } : {}),
    ...spawnOptions,
  })
  if (child.pid === undefined) throw new Error(`${name}: could not start ${command}`)
  let recent = ''
  const keep = (chunk: Buffer) => {
    recent = lastChars(recent + chunk.toString('utf8'), keepOutputChars)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  const exited = new Promise<ProcessExit>((resolveExit) =>
    child.once('exit', (code, signal) => resolveExit({ code, signal })),
  )
  const pid = child.pid
  // A process in a group of its own is signalled as the group: what it started (the node under a
  // `faketime` wrapper) goes with it, where a signal to the wrapper alone left it running.
  const signal = (name: NodeJS.Signals) => {
    try {
      if (ownProcessGroup) globalThis.process.kill(-pid, name)
      else child.kill(name)
    } catch {
      // gone already
    }
  }
  const process: OwnedProcess = {
    name,
    pid,
    child,
    output: () => recent,
    exited,
    kill: signal,
    async stop(stopSignal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return
      signal(stopSignal)
      const timer = setTimeout(() => signal('SIGKILL'), stopGraceMs)
      await exited
      clearTimeout(timer)
    },
  }
  owned.add(process)
  // A process that is gone needs no stopping; tests that kill and restart parts would otherwise pile them up.
  void exited.then(() => owned.delete(process))
  return process
}

/** The last `limit` characters of `text` (all of it for Infinity). */
export function lastChars(text: string, limit: number): string {
  return text.length > limit ? text.slice(-limit) : text
}

/** Stops every process started with `startOwnedProcess`, newest first. */
export async function stopAllOwnedProcesses(): Promise<void> {
  for (const process of [...owned].reverse()) await process.stop()
}

// A crashed or interrupted feedrunner (or test, or bench) must not leave anvil, redis-server or feedrunner parts behind.
process.once('exit', () => {
  for (const ownedProcess of owned) ownedProcess.kill('SIGKILL')
})

/** Polls `check` until it returns true or `timeoutMs` passes. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 10_000,
  intervalMs = 50,
): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return
    await new Promise((resolveDelay) => setTimeout(resolveDelay, intervalMs))
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`)
}
