import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process'

/** A child process this feedrunner started and must stop. */
export interface OwnedProcess {
  readonly name: string
  readonly pid: number
  readonly child: ChildProcess
  /** Recent stdout/stderr, for error messages when the process dies early. */
  output(): string
  stop(signal?: NodeJS.Signals): Promise<void>
}

const owned = new Set<OwnedProcess>()

/** Starts `command` and keeps its PID so `stopAll()` (and process exit) can stop it. */
export function startOwnedProcess(name: string, command: string, args: readonly string[], options: SpawnOptions = {}): OwnedProcess {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options })
  if (child.pid === undefined) throw new Error(`${name}: could not start ${command}`)
  let recent = ''
  const keep = (chunk: Buffer) => {
    recent = (recent + chunk.toString('utf8')).slice(-8_000)
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  const exited = new Promise<void>((resolveExit) => child.once('exit', () => resolveExit()))
  const process: OwnedProcess = {
    name,
    pid: child.pid,
    child,
    output: () => recent,
    async stop(signal = 'SIGTERM') {
      owned.delete(process)
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill(signal)
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
      await exited
      clearTimeout(timer)
    },
  }
  owned.add(process)
  return process
}

/** Stops every process started with `startOwnedProcess`, newest first. */
export async function stopAllOwnedProcesses(): Promise<void> {
  for (const process of [...owned].reverse()) await process.stop()
}

// A crashed or interrupted feedrunner must not leave anvil or redis-server behind.
process.once('exit', () => {
  for (const ownedProcess of owned) ownedProcess.child.kill('SIGKILL')
})

/** Polls `check` until it returns true or `timeoutMs` passes. */
export async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 10_000, intervalMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return
    await new Promise((resolveDelay) => setTimeout(resolveDelay, intervalMs))
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`)
}
