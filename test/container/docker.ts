// The container lane's Docker helpers: the docker CLI as child processes, nothing mocked.
import { execFile, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'

export const repoRoot = join(import.meta.dirname, '../..')

/** What the image may weigh (as `docker images` counts it, MB = 10^6 bytes); docs/docker.md says why. */
export const IMAGE_SIZE_BUDGET_MB = 550

export type DaemonState = { ok: true; version: string } | { ok: false; reason: string }

/** Whether a Docker daemon answers this machine's docker CLI (and why not, when it does not). */
export function dockerDaemon(): DaemonState {
  const probe = spawnSync('docker', ['version', '--format', '{{.Server.Version}}'], {
    encoding: 'utf8',
    timeout: 30_000,
  })
  if (probe.error)
    return { ok: false, reason: `no docker CLI on PATH (${(probe.error as Error).message})` }
  if (probe.status !== 0)
    return {
      ok: false,
      reason: `no Docker daemon answers: ${(probe.stderr || probe.stdout).trim().split('\n')[0]}`,
    }
  return { ok: true, version: probe.stdout.trim() }
}

/** The compose CLI: the `docker compose` plugin, else Debian's `docker-compose`; undefined if neither. */
export function composeCommand(): string[] | undefined {
  for (const command of [['docker', 'compose'], ['docker-compose']]) {
    const probe = spawnSync(command[0]!, [...command.slice(1), 'version'], {
      encoding: 'utf8',
      timeout: 30_000,
    })
    if (!probe.error && probe.status === 0) return command
  }
  return undefined
}

export interface Finished {
  code: number
  stdout: string
  stderr: string
}

/** Runs a command to its end; a non-zero exit is returned, not thrown. */
export function run(
  command: string,
  args: readonly string[],
  options: { timeoutMs?: number; cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<Finished> {
  return new Promise((resolveRun, reject) => {
    execFile(
      command,
      args,
      {
        cwd: options.cwd ?? repoRoot,
        env: options.env ?? process.env,
        timeout: options.timeoutMs ?? 120_000,
        maxBuffer: 64 * 1024 * 1024,
        encoding: 'utf8',
      },
      (error, stdout, stderr) => {
        const code = error ? (error as { code?: unknown }).code : 0
        if (error && typeof code !== 'number')
          return reject(new Error(`${command} ${args.join(' ')}: ${error.message}\n${stderr}`))
        resolveRun({ code: code as number, stdout, stderr })
      },
    )
  })
}

export async function docker(args: readonly string[], timeoutMs = 120_000): Promise<Finished> {
  return run('docker', args, { timeoutMs })
}

/** Like docker(), but a non-zero exit throws with what docker said. */
export async function dockerOk(args: readonly string[], timeoutMs = 120_000): Promise<string> {
  const finished = await docker(args, timeoutMs)
  if (finished.code !== 0)
    throw new Error(`docker ${args.join(' ')} exited ${finished.code}: ${finished.stderr.trim()}`)
  return finished.stdout.trim()
}

/**
 * The base image to build on: FEEDRUNNER_BASE_IMAGE when set, else the official node:22-bookworm-slim
 * when the daemon has it, else the stand-in docker/standin-base.sh builds (or finds, by its content
 * key) from Debian's packages and the npm registry.
 */
export async function baseImage(): Promise<string> {
  const chosen = process.env.FEEDRUNNER_BASE_IMAGE
  if (chosen) return chosen
  if ((await docker(['image', 'inspect', 'node:22-bookworm-slim'])).code === 0)
    return 'node:22-bookworm-slim'
  const script = join(repoRoot, 'docker/standin-base.sh')
  if (!existsSync(script)) throw new Error(`${script} is missing`)
  const built = await run('bash', [script], { timeoutMs: 15 * 60_000 })
  if (built.code !== 0)
    throw new Error(
      `node:22-bookworm-slim is not on this daemon and docker/standin-base.sh failed (exit ${built.code}); set FEEDRUNNER_BASE_IMAGE to a mirror of it:\n${built.stderr.slice(-2000)}`,
    )
  return built.stdout.trim().split('\n').at(-1) as string
}

export interface Container {
  readonly id: string
  readonly name: string
  logs(): Promise<string>
}

/**
 * `docker run -d` as the image's user, read-only root, /tmp as the only writable place, on the host's
 * network (the tests' Redis, chain and feed service listen on the host's loopback).
 */
export async function startContainer(
  image: string,
  name: string,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<Container> {
  const envArgs = Object.entries(env).flatMap(([key, value]) => ['-e', `${key}=${value}`])
  const id = await dockerOk([
    'run',
    '-d',
    '--name',
    name,
    '--network',
    'host',
    '--read-only',
    '--tmpfs',
    '/tmp:rw,size=64m',
    ...envArgs,
    image,
    ...args,
  ])
  return {
    id,
    name,
    logs: async () => {
      const logs = await docker(['logs', id])
      return logs.stdout + logs.stderr
    },
  }
}

/** Waits for a line matching `ready` in the container's output; throws with its output if it exits. */
export async function waitForOutput(
  container: Container,
  ready: RegExp,
  timeoutMs = 120_000,
): Promise<string> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const output = await container.logs()
    if (ready.test(output)) return output
    const running = await dockerOk(['inspect', '-f', '{{.State.Running}}', container.id])
    if (running !== 'true')
      throw new Error(`${container.name} exited before printing ${ready}:\n${output.slice(-3000)}`)
    if (Date.now() > deadline)
      throw new Error(
        `${container.name} printed no ${ready} within ${timeoutMs} ms:\n${output.slice(-3000)}`,
      )
    await delay(250)
  }
}

/** SIGTERM, then the exit code once it stopped, or undefined if it still runs after `boundMs`. */
export async function terminate(
  container: Container,
  boundMs = 10_000,
): Promise<number | undefined> {
  await dockerOk(['kill', '--signal', 'TERM', container.id])
  const deadline = Date.now() + boundMs
  while (Date.now() < deadline) {
    const [running, exitCode] = (
      await dockerOk(['inspect', '-f', '{{.State.Running}} {{.State.ExitCode}}', container.id])
    ).split(' ')
    if (running === 'false') return Number(exitCode)
    await delay(100)
  }
  return undefined
}

export async function removeContainer(container: Container): Promise<void> {
  await docker(['rm', '-f', container.id])
}
