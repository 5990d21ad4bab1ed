import { describe, expect, it } from 'vitest'
import { BlocksNotThereYet } from '../../src/chain/listener/chain-reader.ts'
import { createStallReport, STALL_REPORT_AFTER_MS } from '../../src/chain/listener/stall-report.ts'

interface Line {
  level: 'warn' | 'info'
  fields: Record<string, unknown>
  message: string
}

/** A stall report on a clock the test moves, and the lines it said. */
function reportOnClock() {
  const lines: Line[] = []
  let now = 1_000_000
  const report = createStallReport({
    label: () => 'chain 137 (polygon)',
    log: {
      warn: (fields, message) => void lines.push({ level: 'warn', fields, message }),
      info: (fields, message) => void lines.push({ level: 'info', fields, message }),
    },
    reportEveryMs: 60_000,
    now: () => now,
  })
  const refused = () => new BlocksNotThereYet(120, 121, 'unknown block')
  return {
    report,
    lines,
    refused,
    /** A scan refused every second for `ms`. */
    refusedFor(ms: number) {
      for (let elapsed = 0; elapsed < ms; elapsed += 1_000) {
        report.failed(refused())
        now += 1_000
      }
    },
  }
}

describe('the listener stall report', () => {
  it('says nothing of blocks a node has not got for less than STALL_REPORT_AFTER_MS', () => {
    const { report, lines, refusedFor } = reportOnClock()
    refusedFor(STALL_REPORT_AFTER_MS - 1_000)
    report.scanned()
    // A second short stall starts its own count: the first one's time does not carry over.
    refusedFor(STALL_REPORT_AFTER_MS - 1_000)
    report.scanned()
    expect(lines).toEqual([])
  })

  it('says a lasting stall once, again once a reporting interval, and when the blocks are read', () => {
    const { report, lines, refusedFor } = reportOnClock()
    refusedFor(STALL_REPORT_AFTER_MS + 1_000)
    expect(lines).toHaveLength(1)
    const down = lines[0]!
    expect(down.level).toBe('warn')
    expect(down.fields).toMatchObject({ state: 'stalled', fromBlock: 120, toBlock: 121 })
    // Root cause and remedy: what the node answered, what waits, where to look, the settings.
    expect(down.message).toContain(
      'chain 137 (polygon): the listener has not been able to read blocks 120-121 for 30 s',
    )
    expect(down.message).toContain('"unknown block"')
    expect(down.message).toContain('load balancer')
    expect(down.message).toContain('RPC_URL')

    refusedFor(59_000)
    expect(lines).toHaveLength(1)
    refusedFor(2_000)
    expect(lines).toHaveLength(2)
    expect(lines[1]!.level).toBe('warn')
    expect(lines[1]!.message).toContain('still cannot read blocks 120-121 after 1 min 30 s')
    expect(lines[1]!.fields['refused']).toBe(60)

    report.scanned()
    expect(lines).toHaveLength(3)
    expect(lines[2]!.level).toBe('info')
    expect(lines[2]!.message).toBe(
      'chain 137 (polygon): the listener reads its blocks again after 1 min 32 s; 92 reads were refused in all',
    )
    // Scans that go on reading say nothing more.
    report.scanned()
    expect(lines).toHaveLength(3)
  })
})
