import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Socket } from 'node:net'
import { freePort } from './ports.ts'
import { startOwnedProcess, waitFor, type OwnedProcess } from './process.ts'
import { FeedrunnerError } from '../config/errors.ts'

/** True when something at `redisUrl` answers PING with PONG. */
export async function redisAnswers(redisUrl: string, timeoutMs = 500): Promise<boolean> {
  const { hostname, port } = new URL(redisUrl)
  return new Promise((resolveAnswer) => {
    const socket = new Socket()
    const done = (answer: boolean) => {
      socket.destroy()
      resolveAnswer(answer)
    }
    socket.setTimeout(timeoutMs, () => done(false))
    socket.once('error', () => done(false))
    socket.once('data', (data) =>
      done(data.toString().startsWith('+PONG') || data.toString().startsWith('-NOAUTH')),
    )
    socket.connect(Number(port || 6379), hostname.replace(/^\[|\]$/g, '') || '127.0.0.1', () =>
      socket.write('PING\r\n'),
    )
  })
}

export interface PrivateRedis {
  readonly url: string
  readonly port: number
  readonly process: OwnedProcess
  /** Its working directory: `persistDir`, or a temporary one that stop() removes. */
  readonly dir: string
  stop(): Promise<void>
}

export class RedisServerMissingError extends FeedrunnerError {
  override readonly name = 'RedisServerMissingError'
  constructor() {
    super(
      'No Redis answers at REDIS_URL and redis-server is not installed. Install it (Debian/Ubuntu: ' +
        '`sudo apt-get install -y redis-server`, macOS: `brew install redis`) or set REDIS_URL to a running Redis.',
      { kind: 'config' },
    )
  }
}

export function redisServerInstalled(): boolean {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

export interface PrivateRedisOptions {
  port?: number
  /** Keep data on disk (AOF) in `dir`, as production runs it; default: memory only. */
  persistDir?: string
  /** More redis-server options, e.g. `['--replicaof', '127.0.0.1', '6379']` for a replica. */
  extraArgs?: readonly string[]
}

/** Starts a redis-server of our own on a free loopback port, in the foreground so we own its PID. */
export async function startPrivateRedis(options: PrivateRedisOptions = {}): Promise<PrivateRedis> {
  if (!redisServerInstalled()) throw new RedisServerMissingError()
  const port = options.port ?? (await freePort())
  const dir = options.persistDir ?? mkdtempSync(join(tmpdir(), 'feedrunner-redis-'))
  const persistence = options.persistDir
    ? ['--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '']
    : ['--appendonly', 'no', '--save', '']
  const process = startOwnedProcess(
    'redis-server',
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      ...persistence,
      ...(options.extraArgs ?? []),
    ],
    { ownProcessGroup: true },
  )
  const url = `redis://127.0.0.1:${port}`
  try {
    await waitFor(`redis-server on ${url}`, () => redisAnswers(url))
  } catch (error) {
    await process.stop()
    if (options.persistDir === undefined) rmSync(dir, { recursive: true, force: true })
    throw new Error(`redis-server did not start: ${(error as Error).message}\n${process.output()}`)
  }
  const stop = async (): Promise<void> => {
    await process.stop()
    // A directory made here is ours to remove; a persistDir is the caller's.
    if (options.persistDir === undefined) rmSync(dir, { recursive: true, force: true })
  }
  return { url, port, process, dir, stop }
}
