import { spawn } from 'node:child_process'
import { join } from 'node:path'

const bin = join(import.meta.dirname, '../../../bin/feedrunner.js')

export interface CliResult {
  code: number | null
  stdout: string
  stderr: string
}

/** Runs `feedrunner ARGS` as a user would, in its own process; the bound only catches a hang. */
export function runFeedrunner(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  hangAfterMs = 120_000,
  cwd?: string,
): Promise<CliResult> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [bin, ...args], {
      cwd,
      env: { ...process.env, LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`feedrunner ${args.join(' ')} hung:\n${stdout}\n${stderr}`))
    }, hangAfterMs)
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolveRun({ code, stdout, stderr })
    })
  })
}
