import { spawn, type ChildProcess } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { JsonRpcProvider, Wallet } from 'ethers'
import { afterAll, describe, expect, it } from 'vitest'
import { ANVIL_PRIVATE_KEYS, startAnvil } from '../../src/dev/anvil.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const bin = join(import.meta.dirname, '../../bin/feedrunner.js')

interface Finished {
  code: number | null
  output: string
}

function runCli(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<Finished> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(
        new Error(`feedrunner ${args.join(' ')} did not finish in ${timeoutMs} ms:\n${output}`),
      )
    }, timeoutMs)
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolveRun({ code, output })
    })
  })
}

describe('anvil accounts', () => {
  it("every dev key is one of anvil's funded accounts", async () => {
    const anvil = await startAnvil()
    try {
      const provider = new JsonRpcProvider(anvil.rpcUrl)
      for (const key of ANVIL_PRIVATE_KEYS)
        expect(
          await provider.getBalance(new Wallet(key).address),
          key.slice(0, 10),
        ).toBeGreaterThan(0n)
      provider.destroy()
    } finally {
      await anvil.stop()
    }
  })
})

describe('the two commands of the README', () => {
  const children: ChildProcess[] = []
  afterAll(() => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
  })

  it('npm start (feedrunner dev) prints what runs where, a ready line, and stops everything on SIGTERM', async () => {
    const child = spawn(process.execPath, [bin, 'dev'], {
      env: {
        ...process.env,
        REDIS_URL: testRedisUrl(),
        QUEUE_PREFIX: uniquePrefix('dev-cli'),
        LOG_LEVEL: 'warn',
        // Its own state file: a dev stack a developer runs from this checkout is left alone.
        DEV_STATE_FILE: join(tmpdir(), `feedrunner-dev-cli-${process.pid}.json`),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    children.push(child)
    let output = ''
    const started = Date.now()
    await new Promise<void>((resolveReady, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no ready line within 60 s:\n${output}`)),
        60_000,
      )
      child.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString()
        if (output.includes('feedrunner dev ready')) {
          clearTimeout(timer)
          resolveReady()
        }
      })
      child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()))
      child.once('exit', (code) =>
        reject(new Error(`feedrunner dev exited with ${code}:\n${output}`)),
      )
    })
    // The bar is 30 s on a quiet machine; CI shares two cores with other test files.
    expect(Date.now() - started).toBeLessThan(60_000)
    for (const part of [
      'Redis',
      'chain (anvil)',
      'Operator',
      'FeedConsumer',
      'feed service',
      'adapter',
    ])
      expect(output).toContain(part)
    const rpcUrl = /chain \(anvil\)\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1]
    expect(rpcUrl).toBeDefined()
    child.kill('SIGTERM')
    const exit = await new Promise<{ code: number | null; signal: string | null }>((resolveExit) =>
      child.once('exit', (code, signal) => resolveExit({ code, signal })),
    )
    expect(exit, output.slice(-400)).toEqual({ code: 0, signal: null })
    // anvil was stopped with the stack: its port no longer answers.
    await expect(fetch(rpcUrl!, { method: 'POST', body: '{}' })).rejects.toThrow()
  }, 90_000)

  it('feedrunner demo fulfils every job spec with the expected value and exits 0', async () => {
    const finished = await runCli(
      ['demo'],
      { ...process.env, REDIS_URL: testRedisUrl(), QUEUE_PREFIX: uniquePrefix('demo-cli') },
      150_000,
    )
    expect(finished.output).toMatch(/(\d+) of \1 requests fulfilled with the expected value/)
    expect(finished.output).not.toContain('FAILED')
    expect(finished.code).toBe(0)
  }, 160_000)
})
