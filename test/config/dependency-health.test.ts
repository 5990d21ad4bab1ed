import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import {
  DependencyHealth,
  formatDuration,
  reasonOf,
  type DependencyHealthOptions,
} from '../../src/config/dependency-health.ts'

interface Line {
  level: 'warn' | 'info'
  fields: Record<string, unknown>
  message: string
}

function recorder() {
  const lines: Line[] = []
  return {
    lines,
    log: {
      warn: (fields: Record<string, unknown>, message: string) =>
        lines.push({ level: 'warn', fields, message }),
      info: (fields: Record<string, unknown>, message: string) =>
        lines.push({ level: 'info', fields, message }),
    },
  }
}

/** Redis's outage report, as Connections makes it, with `more` of its options. */
function redisHealth(
  log: ReturnType<typeof recorder>['log'],
  more: Partial<DependencyHealthOptions> = {},
): DependencyHealth {
  return new DependencyHealth({
    dependency: 'Redis',
    setting: 'REDIS_URL',
    url: 'redis://127.0.0.1:6390',
    log,
    reportEveryMs: 60_000,
    ...more,
  })
}

const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.5:8545'), {
  code: 'ECONNREFUSED',
})

describe('DependencyHealth: an outage as state changes', () => {
  beforeEach(() => vi.useFakeTimers())
  afterEach(() => vi.useRealTimers())

  it('one line down, one per interval with the failures since, one back with the length', () => {
    const { lines, log } = recorder()
    const health = new DependencyHealth({
      dependency: 'the RPC node',
      setting: 'RPC_URL',
      url: 'https://user:pw@rpc.example:8545/v2/secret-api-key?token=abc',
      log,
      reportEveryMs: 60_000,
      now: () => Date.now(),
    })
    for (let call = 0; call < 5; call++) health.failed(refused)
    expect(lines).toHaveLength(1)
    expect(lines[0]?.message).toBe(
      'the RPC node is not answering (RPC_URL rpc.example:8545): ECONNREFUSED',
    )
    vi.advanceTimersByTime(60_000)
    for (let call = 0; call < 3; call++) health.failed(refused)
    vi.advanceTimersByTime(60_000)
    expect(lines.map((line) => line.fields.failures)).toEqual([undefined, 4, 3])
    expect(lines[1]?.message).toMatch(
      /still not answering \(RPC_URL rpc\.example:8545\) after 1 min: 4 failed calls/,
    )
    vi.advanceTimersByTime(5_000)
    health.answered()
    health.answered()
    expect(lines).toHaveLength(4)
    expect(lines[3]).toMatchObject({ level: 'info', fields: { state: 'up', failures: 8 } })
    expect(lines[3]?.message).toBe(
      'the RPC node answers again (RPC_URL rpc.example:8545) after 2 min 5 s down; 8 failed calls in all',
    )
    expect(JSON.stringify(lines)).not.toMatch(/secret-api-key|token=abc|pw@/)
    // Up again: no more "still down" lines.
    vi.advanceTimersByTime(10 * 60_000)
    expect(lines).toHaveLength(4)
  })

  it('with several connections, back only once every one that failed is ready again', () => {
    const { lines, log } = recorder()
    const health = redisHealth(log)
    health.failed(refused, 'queue')
    health.failed(refused, 'worker')
    health.answered('queue')
    expect(health.down).toBe(true)
    health.answered('worker')
    expect(health.down).toBe(false)
    expect(lines.map((line) => line.fields.state)).toEqual(['down', 'up'])
    health.close()
  })

  it('probes a dependency nobody calls while it is down, and reports it back when the probe answers', async () => {
    const { lines, log } = recorder()
    let answers = false
    const health = new DependencyHealth({
      dependency: 'the RPC node',
      setting: 'RPC_URL',
      url: 'http://127.0.0.1:8545',
      log,
      reportEveryMs: 60_000,
      probe: async () => {
        if (!answers) throw refused
      },
    })
    health.failed(refused)
    await vi.advanceTimersByTimeAsync(5_000)
    expect(health.down).toBe(true)
    // A failed probe is not a failed call.
    expect(health.failures).toBe(1)
    answers = true
    await vi.advanceTimersByTimeAsync(3_000)
    expect(health.down).toBe(false)
    expect(lines.at(-1)?.fields).toMatchObject({ state: 'up', failures: 1 })
  })

  it('a dependency that passes a probe between failed calls (a Redis at its memory limit) stays down', async () => {
    const { lines, log } = recorder()
    const full = Object.assign(
      new Error("OOM command not allowed when used memory > 'maxmemory'."),
      {
        name: 'ReplyError',
      },
    )
    const health = redisHealth(log, {
      probe: async () => undefined,
    })
    health.failed(full)
    // Every probe passes, but a call fails every 2 s: never three passes in a row.
    for (let second = 0; second < 30; second += 2) {
      await vi.advanceTimersByTimeAsync(2_000)
      health.failed(full)
    }
    expect(health.down).toBe(true)
    expect(lines.map((line) => line.fields.state)).toEqual(['down'])
    await vi.advanceTimersByTimeAsync(3_000)
    expect(health.down).toBe(false)
    expect(lines.map((line) => line.fields.state)).toEqual(['down', 'up'])
    health.close()
  })
  it('a connection made again while Redis refuses writes does not say it is back: its probe does', async () => {
    const { lines, log } = recorder()
    const full = Object.assign(
      new Error("OOM command not allowed when used memory > 'maxmemory'."),
      {
        name: 'ReplyError',
      },
    )
    let takesWrites = false
    const health = redisHealth(log, {
      probe: async () => {
        if (!takesWrites) throw full
      },
    })
    health.failed(full)
    health.answered('worker')
    await vi.advanceTimersByTimeAsync(5_000)
    expect(health.down).toBe(true)
    takesWrites = true
    await vi.advanceTimersByTimeAsync(3_000)
    expect(lines.map((line) => line.fields.state)).toEqual(['down', 'up'])
    health.close()
  })

  it('a dependency that answers but refuses is said for what it does, with the remedy', () => {
    const { lines, log } = recorder()
    const health = redisHealth(log, {
      refusal: () => ({
        doing: 'refuses writes: its memory is full',
        remedy: 'raise its maxmemory',
      }),
    })
    health.failed(new Error("OOM command not allowed when used memory > 'maxmemory'."))
    vi.advanceTimersByTime(60_000)
    health.answered()
    expect(lines.map((line) => line.message)).toEqual([
      "Redis refuses writes: its memory is full (REDIS_URL 127.0.0.1:6390): OOM command not allowed when used memory > 'maxmemory'; raise its maxmemory",
      'Redis still refuses writes: its memory is full (REDIS_URL 127.0.0.1:6390) after 1 min: 0 failed calls since the last line',
      'Redis answers again (REDIS_URL 127.0.0.1:6390) after 1 min down; 1 failed call in all',
    ])
  })
})

describe('reasonOf and formatDuration', () => {
  it('a network code, else the first line with URLs cut to host:port', () => {
    expect(reasonOf(new TypeError('fetch failed', { cause: refused }))).toBe('ECONNREFUSED')
    expect(reasonOf(new Error('POST https://rpc.example/v2/KEY failed\n    at x (y.ts:1:2)'))).toBe(
      'POST rpc.example:443 failed',
    )
    expect([800, 12_000, 60_000, 125_000].map(formatDuration)).toEqual([
      '800 ms',
      '12 s',
      '1 min',
      '2 min 5 s',
    ])
  })
})
