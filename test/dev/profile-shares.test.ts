import { describe, expect, it } from 'vitest'
import { cpuShares, type Profile } from '../../bench/runner/profile-shares.ts'

// bench/runner/profile-shares.ts gives docs/performance.md its "where the runner's CPU goes" table:
// a sample counts to the most particular part any frame of its stack names (the code that asked for
// the work, not the library that did it), to a library only when no part is named, idle time to none.

const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({
  id,
  callFrame: { functionName, url },
  children,
})

const profile: Profile = {
  nodes: [
    frame(1, '(root)', '', [2, 5, 6, 7, 9]),
    frame(2, 'exec', 'file:///app/node_modules/ioredis/built/Pipeline.js', [3]),
    frame(3, 'write', 'node:net', [4]),
    frame(4, 'writeUtf8String', ''),
    frame(5, '(garbage collector)', ''),
    frame(6, '(idle)', ''),
    frame(7, 'runTask', 'file:///app/dist/pipeline/executor.js', [11]),
    frame(11, 'run', 'file:///app/dist/pipeline/tasks/bridge.js', [8]),
    frame(8, 'request', 'file:///app/node_modules/undici/lib/api/api-request.js'),
    frame(9, 'write', 'file:///app/dist/runner/run-record.js', [10]),
    frame(10, 'sendCommand', 'file:///app/node_modules/ioredis/built/Redis.js'),
  ],
  // Each sample's delta is the time since the one before: the first sample (10 us) is before --from.
  samples: [4, 4, 4, 5, 6, 6, 8, 7, 10],
  timeDeltas: [10, 1_000, 1_000, 1_000, 5_000, 5_000, 1_000, 1_000, 1_000],
}

describe('bench:profile-shares', () => {
  it('counts each busy sample to what the request pays it for, a library only without a caller', () => {
    const { busyUs, byPart } = cpuShares(profile, 0.02)
    expect(busyUs).toBe(6_000)
    expect(Object.fromEntries(byPart)).toEqual({
      // ioredis alone on the stack: a reply, or a write whose caller the stack does not hold.
      'Redis client, no caller on the stack (replies off the socket)': 2_000,
      'garbage collector': 1_000,
      // undici under the bridge task, itself under the executor: the bridge task is the purpose.
      'the adapter call (bridge task, HTTP client)': 1_000,
      'pipeline executor (tasks other than the above)': 1_000,
      // ioredis under the run record's write: the run records pay for it.
      'run records': 1_000,
    })
  })
})
