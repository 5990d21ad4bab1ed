import { describe, expect, it } from 'vitest'
import { cpuShares, type Profile } from '../../bench/runner/profile-shares.ts'

// bench/runner/profile-shares.ts gives docs/performance.md its "where the runner's CPU goes" table:
// a sample counts to the first part named from the sampled frame outwards, idle time to none.

const frame = (id: number, functionName: string, url: string, children: number[] = []) => ({
  id,
  callFrame: { functionName, url },
  children,
})

const profile: Profile = {
  nodes: [
    frame(1, '(root)', '', [2, 5, 6, 7]),
    frame(2, 'exec', 'file:///app/node_modules/ioredis/built/Pipeline.js', [3]),
    frame(3, 'write', 'node:net', [4]),
    frame(4, 'writeUtf8String', ''),
    frame(5, '(garbage collector)', ''),
    frame(6, '(idle)', ''),
    frame(7, 'runTask', 'file:///app/dist/pipeline/executor.js', [8]),
    frame(8, 'request', 'file:///app/node_modules/undici/lib/api/api-request.js'),
  ],
  // Each sample's delta is the time since the one before: the first sample (10 us) is before --from.
  samples: [4, 4, 4, 5, 6, 6, 8, 7],
  timeDeltas: [10, 1_000, 1_000, 1_000, 5_000, 5_000, 1_000, 1_000],
}

describe('bench:profile-shares', () => {
  it('counts each busy sample to the first part on its stack, from the leaf out', () => {
    const { busyUs, byPart } = cpuShares(profile, 0.02)
    expect(busyUs).toBe(5_000)
    expect(Object.fromEntries(byPart)).toEqual({
      'Redis client (ioredis, scripts, run records, key leases, transaction store)': 2_000,
      'garbage collector': 1_000,
      'HTTP client (the bridge task to the adapter, the sender JSON-RPC batches)': 1_000,
      'pipeline (executor and tasks)': 1_000,
    })
  })
})
