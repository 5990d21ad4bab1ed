import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { keepLogs } from '../../chaos/kept-logs.ts'
import { KEPT_OUTPUT_CHARS } from '../../chaos/part.ts'

const roots: string[] = []
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true })
})

describe("a violating schedule's logs are kept whole", () => {
  it('writes each process its file, in a folder named by the seed and the time', () => {
    const root = mkdtempSync(join(tmpdir(), 'chaos-logs-'))
    roots.push(root)
    const whole = Array.from({ length: 20_000 }, (_, line) => `line ${line}`).join('\n')
    const folder = keepLogs(
      root,
      30303,
      { 'runner-1': whole, 'adapter/worker': 'ready\n' },
      new Date('2026-12-01T01:02:03.456Z'),
    )
    expect(basename(folder)).toBe('30303-2026-12-01T01-02-03-456Z')
    expect(readdirSync(folder).sort()).toEqual(['adapter_worker.log', 'runner-1.log'])
    // The whole output, its first line too: a stall's cause is logged long before its end.
    expect(readFileSync(join(folder, 'runner-1.log'), 'utf8')).toBe(whole)
    expect(readFileSync(join(folder, 'adapter_worker.log'), 'utf8')).toBe('ready\n')
  })

  it('keeps megabytes of each process, not the last few kilobytes', () => {
    expect(KEPT_OUTPUT_CHARS).toBeGreaterThanOrEqual(1_000_000)
  })
})
