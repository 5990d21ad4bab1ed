import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'
import { alive, descendants } from '../support/process-tree.ts'

// Two SIGINTs at once, as some supervisors and terminals send them (`kill -INT` to npm and to its
// node; npm passes its own on): the second must not end feedrunner by Node's default action while
// it stops the dev stack's redis-server and anvil, which were then left running under PID 1.

const projectRoot = join(import.meta.dirname, '../..')
const dir = mkdtempSync(join(tmpdir(), 'feedrunner-signals-'))
const tree = new Set<number>()

afterAll(() => {
  for (const pid of tree) if (alive(pid)) process.kill(pid, 'SIGKILL')
  rmSync(dir, { recursive: true, force: true })
})

function commandOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')
  } catch {
    return ''
  }
}

describe('npm start, then SIGINT to npm and to its node, and again while it stops', () => {
  it('stops the whole tree: no redis-server or anvil left behind', async () => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DEV_STATE_FILE: join(dir, 'dev.json'),
      LOG_LEVEL: 'warn',
    }
    // No REDIS_URL: the stack starts a redis-server of its own, as on a fresh machine.
    delete env.REDIS_URL
    delete env.QUEUE_PREFIX
    const npm = spawn('npm', ['start'], {
      cwd: projectRoot,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    npm.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const exited = new Promise<void>((resolveExit) => npm.once('exit', () => resolveExit()))
    await waitFor(
      `npm start to be ready; its output so far:\n${output}`,
      async () => output.includes('feedrunner dev ready'),
      240_000,
      200,
    )
    for (const pid of descendants(npm.pid!)) tree.add(pid)
    const commands = [...tree].map(commandOf)
    const node = [...tree].find((pid) => commandOf(pid).includes('bin/feedrunner.js dev'))
    expect(node, commands.join('\n')).toBeDefined()
    expect(
      commands.some((command) => command.startsWith('redis-server')),
      commands.join('\n'),
    ).toBe(true)
    expect(
      commands.some((command) => command.includes('anvil')),
      commands.join('\n'),
    ).toBe(true)

    process.kill(npm.pid!, 'SIGINT')
    process.kill(node!, 'SIGINT')
    // Signals of one kind that arrive together are delivered once: one more while it stops.
    await waitFor('the stack to say it stops', async () => output.includes('stopping...'), 30_000)
    if (alive(node!)) process.kill(node!, 'SIGINT')
    await exited
    await waitFor(
      `every process of the tree to end (${[...tree].filter(alive).map(commandOf).join('; ')} left)`,
      async () => [...tree].every((pid) => !alive(pid)),
      30_000,
      100,
    )
    expect([...tree].filter(alive)).toEqual([])
  }, 300_000)
})
