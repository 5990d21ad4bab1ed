import { execFileSync } from 'node:child_process'

/** Runs a TypeScript fixture in a child process and parses the JSON of its last output line. */
export function runJsonFixture<T>(fixture: URL, env: Record<string, string> = {}): T {
  const output = execFileSync(process.execPath, ['--import', 'tsx', fixture.pathname], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  })
  return JSON.parse(output.trim().split('\n').at(-1) as string) as T
}
