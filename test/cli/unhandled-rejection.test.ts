import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

const FIXTURE = join(import.meta.dirname, 'fixtures/unhandled-rejection.ts')

describe('a promise that rejects with nothing to handle it', () => {
  it('ends the process with code 1 after one fatal log line, root cause first', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    // A hang catcher only: the process ends at once.
    const code = await new Promise<number | null>((resolveExit, reject) => {
      const timer = setTimeout(() => reject(new Error(`still running:\n${stdout}`)), 60_000)
      child.once('exit', (exitCode) => {
        clearTimeout(timer)
        resolveExit(exitCode)
      })
    })
    expect(code).toBe(1)
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { level: number; err: string; msg: string; at?: string })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({ level: 60, err: 'lease lost; the watch of nonce 7 ended' })
    expect(lines[0]!.msg).toMatch(/nothing to handle it.*the process exits/)
    expect(lines[0]!.at).toMatch(/unhandled-rejection\.ts/)
  })
})
