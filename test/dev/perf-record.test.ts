import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'

// BENCH_PERF's node flags (bench/runner/perf-record.ts): `--perf-basic-prof` turns V8's own log on
// too, and by default V8 writes it into the process's working directory, one file per isolate.

const made: string[] = []
const perfBefore = process.env.BENCH_PERF
afterEach(() => {
  for (const path of made.splice(0)) rmSync(path, { recursive: true, force: true })
  if (perfBefore === undefined) delete process.env.BENCH_PERF
  else process.env.BENCH_PERF = perfBefore
})

describe('a process BENCH_PERF records', () => {
  it("writes V8's log beside the recordings, none into its working directory", async () => {
    process.env.BENCH_PERF = 'runner'
    const { perfNodeArgs } = await import('../../bench/runner/perf-record.ts')
    const cwd = mkdtempSync(join(tmpdir(), 'feedrunner-perf-cwd-'))
    made.push(cwd)
    // A worker thread: each isolate would get a log file of its own.
    const worker = 'new (require("node:worker_threads").Worker)("", { eval: true })'
    const child = spawnSync(process.execPath, [...perfNodeArgs('runner, 1 key'), '-e', worker], {
      cwd,
      encoding: 'utf8',
    })
    // V8 writes its perf map to /tmp whatever the temporary directory is.
    made.push(`/tmp/perf-${child.pid}.map`)
    const log = join(tmpdir(), 'feedrunner-bench-profiles', `v8-${child.pid}.log`)
    made.push(log)
    expect(child.status, child.stderr).toBe(0)
    expect(readdirSync(cwd)).toEqual([])
    expect(existsSync(log)).toBe(true)
  })
})
