import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startOwnedProcess, waitFor, type OwnedProcess } from '../../src/dev/process.ts'
import { RequesterAdmission, type RequesterLimits } from '../../src/runner/admission.ts'
import { LIBFAKETIME } from '../reliability/support.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const FIXTURE = join(import.meta.dirname, 'fixtures/admission-host.ts')
const CHAIN = 31337
/** How far the other runner host's wall clock is off this one's (and Redis's). */
const OFF_BY_SECONDS = 300
/** Renewed every second: a loaded machine may hold a process back a little without losing a slot. */
const LEASE_MS = 3_000

const ALICE = '0x00000000000000000000000000000000000A11CE'
const BOB = '0x0000000000000000000000000000000000000B0B'
const CAROL = '0x000000000000000000000000000000000000CA01'

interface Admitted {
  runId: string
  ok: boolean
  /** The other host's Date.now() when it admitted the run. */
  hostNow: number
}

/**
 * Requester admission on runner hosts whose wall clocks disagree: one runner here, on the machine's
 * clock, and one in a process of its own whose clock libfaketime puts 300 s behind or ahead, both on
 * one Redis. Leases end and starts leave the window by Redis's clock, so each sees the other's runs
 * as they are. On the host's clock (the code before) each check below failed: a runner 300 s behind
 * wrote leases and starts that the one on time took for 5 minutes old and dropped (a second run
 * admitted past REQUESTER_MAX_CONCURRENT_RUNS, a third start past REQUESTER_MAX_REQUESTS_PER_MINUTE);
 * a runner 300 s ahead dropped the lease of the one on time as long expired (a third run admitted past
 * a bound of two), and once dead kept its own slot for 5 minutes (the wait below timed out when its
 * run was admitted before the one here).
 */
describe('requester admission across runner hosts whose clocks are 300 s apart', () => {
  const redis = new Redis(testRedisUrl())
  const hosts: OwnedProcess[] = []
  const held: Array<() => void> = []

  beforeAll(() => {
    if (!existsSync(LIBFAKETIME))
      throw new Error(`${LIBFAKETIME} is missing: apt-get install faketime (.ci/run does this)`)
  })

  afterAll(async () => {
    for (const release of held) release()
    for (const host of hosts) await host.stop('SIGKILL')
    redis.disconnect()
  })

  /** A runner host `offsetSeconds` off, which admits `admits` in order and holds what it keeps. */
  async function otherHost(
    offsetSeconds: number,
    limits: RequesterLimits,
    prefix: string,
    admits: ReadonlyArray<{ requester: string; runId: string; release: boolean }>,
  ): Promise<{ host: OwnedProcess; admitted: Admitted[] }> {
    const host = startOwnedProcess(
      'admission-host',
      process.execPath,
      ['--import', 'tsx', FIXTURE],
      {
        env: {
          ...process.env,
          LD_PRELOAD: LIBFAKETIME,
          FAKETIME: `${offsetSeconds > 0 ? '+' : ''}${offsetSeconds}s`,
          // Timers run on the monotonic clock: only the wall clock (Date.now()) is shifted.
          FAKETIME_DONT_FAKE_MONOTONIC: '1',
          REDIS_URL: testRedisUrl(),
          PREFIX: prefix,
          CHAIN_ID: String(CHAIN),
          LEASE_MS: String(LEASE_MS),
          LIMITS: JSON.stringify(limits),
          ADMITS: JSON.stringify(admits),
        },
      },
    )
    hosts.push(host)
    await waitFor('the other host holding', async () => /^holding$/m.test(host.output()), 60_000)
    const admitted = host
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Admitted)
    // The fault is real: that host's clock is minutes off this one's.
    for (const { hostNow } of admitted)
      expect(Math.abs(hostNow - Date.now() - offsetSeconds * 1_000)).toBeLessThan(30_000)
    return { host, admitted }
  }

  const onTime = (limits: RequesterLimits, prefix: string) =>
    new RequesterAdmission(limits, { redis, prefix, chainId: CHAIN, leaseMs: LEASE_MS })

  /** Redis's clock, milliseconds. */
  const redisNow = async () => {
    const [seconds, micros] = await redis.time()
    return Number(seconds) * 1_000 + Math.floor(Number(micros) / 1_000)
  }

  it('a runner 300 s behind keeps its slot and its starts: the runner on time counts them', async () => {
    const prefix = uniquePrefix('admission-clock')
    const limits = { maxConcurrentRuns: 1, maxRequestsPerMinute: 2 }
    const { admitted } = await otherHost(-OFF_BY_SECONDS, limits, prefix, [
      { requester: ALICE, runId: 'alice-1', release: false },
      { requester: BOB, runId: 'bob-1', release: true },
      { requester: BOB, runId: 'bob-2', release: true },
    ])
    expect(admitted.map((run) => run.ok)).toEqual([true, true, true])
    const here = onTime(limits, prefix)
    expect(await here.admit(ALICE, 'alice-2')).toMatchObject({
      ok: false,
      reasonClass: 'requester_busy',
    })
    expect(await here.admit(BOB, 'bob-3')).toMatchObject({
      ok: false,
      reasonClass: 'requester_rate_limited',
    })
    // Two leases later by Redis's clock the slot is still held: the renewals extend it by that clock.
    const past = (await redisNow()) + 2 * LEASE_MS
    await waitFor('two leases gone by', async () => (await redisNow()) > past, 30_000, 100)
    expect(await here.admit(ALICE, 'alice-2')).toMatchObject({
      ok: false,
      reasonClass: 'requester_busy',
    })
  }, 90_000)

  it('a runner 300 s ahead that dies gives its slot back a lease later by Redis clock', async () => {
    const prefix = uniquePrefix('admission-clock')
    const limits = { maxConcurrentRuns: 2, maxRequestsPerMinute: 0 }
    const here = onTime(limits, prefix)
    // A run of this runner's holds the other slot all along (and keeps the key alive, renewing it).
    const mine = await here.admit(CAROL, 'carol-0')
    if (!mine.ok) throw new Error('the first run of the requester was refused')
    held.push(mine.release)
    const { host, admitted } = await otherHost(OFF_BY_SECONDS, limits, prefix, [
      { requester: CAROL, runId: 'carol-1', release: false },
    ])
    expect(admitted.map((run) => run.ok)).toEqual([true])
    expect(await here.admit(CAROL, 'carol-2')).toMatchObject({ ok: false })
    await host.stop('SIGKILL')
    // The bound only catches a slot kept for the 300 s of the dead host's clock (a lease is 3 s).
    await waitFor(
      "the dead runner's slot free",
      async () => {
        const next = await here.admit(CAROL, 'carol-2')
        if (next.ok) held.push(next.release)
        return next.ok
      },
      30_000,
      100,
    )
  }, 90_000)
})
