import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import {
  DEFAULT_MIN_CONTRACT_PAYMENT_JUELS,
  refusalOf,
  RequesterAdmission,
  type RequesterLimits,
} from '../../src/runner/admission.ts'
import { parseSettings } from '../../src/config/settings.ts'
import type { SpecOf } from '../../src/pipeline/index.ts'
import { withChainDefaults } from '../../src/runner/job-registry.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

const ALICE = '0x00000000000000000000000000000000000A11CE'
const BOB = '0x0000000000000000000000000000000000000B0B'
const CHAIN = 31337

const redis = new Redis(testRedisUrl())
afterAll(() => redis.quit())

/** Two admissions on one Redis and prefix stand for two runner processes. */
function processes(limits: RequesterLimits, windowMs?: number) {
  const prefix = uniquePrefix('admission')
  const one = () => new RequesterAdmission(limits, { redis, prefix, chainId: CHAIN, windowMs })
  return [one(), one()] as const
}

describe('per-requester admission, shared through Redis', () => {
  it('refuses a requester at REQUESTER_MAX_CONCURRENT_RUNS across processes while others still get in, and frees a slot on release', async () => {
    const [a, b] = processes({ maxConcurrentRuns: 2, maxRequestsPerMinute: 0 })
    const first = await a.admit(ALICE, 'r1')
    const second = await b.admit(ALICE.toLowerCase(), 'r2')
    expect(first.ok && second.ok).toBe(true)
    const third = await a.admit(ALICE, 'r3')
    expect(third).toMatchObject({ ok: false, reasonClass: 'requester_busy' })
    expect(!third.ok && third.reason).toBe(
      `requester ${ALICE} has 2 runs in progress on chain ${CHAIN}, the most REQUESTER_MAX_CONCURRENT_RUNS (2) allows`,
    )
    expect((await b.admit(BOB, 'r4')).ok).toBe(true)
    // A redelivery of a run that holds a slot is not counted twice.
    expect((await b.admit(ALICE, 'r2')).ok).toBe(true)
    if (first.ok) {
      first.release()
      first.release()
    }
    await expect.poll(async () => (await b.admit(ALICE, 'r5')).ok).toBe(true)
    expect((await a.admit(ALICE, 'r6')).ok).toBe(false)
  })

  it('counts each chain apart: a requester at its bound on one chain is admitted on another', async () => {
    const prefix = uniquePrefix('admission')
    const limits = { maxConcurrentRuns: 1, maxRequestsPerMinute: 1 }
    const onChain = (chainId: number) => new RequesterAdmission(limits, { redis, prefix, chainId })
    const [mainnet, polygon] = [onChain(1), onChain(137)]
    const first = await mainnet.admit(ALICE, 'm1')
    expect(first.ok).toBe(true)
    const refused = await mainnet.admit(ALICE, 'm2')
    expect(refused).toMatchObject({ ok: false })
    expect(!refused.ok && refused.reason).toContain('on chain 1,')
    const elsewhere = await polygon.admit(ALICE, 'p1')
    expect(elsewhere.ok).toBe(true)
    for (const admitted of [first, elsewhere]) if (admitted.ok) admitted.release()
  })

  it("frees a crashed process's slots when their lease runs out by Redis clock", async () => {
    const prefix = uniquePrefix('admission')
    const limits = { maxConcurrentRuns: 1, maxRequestsPerMinute: 0 }
    // The crashed process's connection is gone: its renewals never reach Redis.
    const lost = new Redis(testRedisUrl())
    const crashed = new RequesterAdmission(limits, {
      redis: lost,
      prefix,
      chainId: CHAIN,
      leaseMs: 300,
    })
    const alive = new RequesterAdmission(limits, { redis, prefix, chainId: CHAIN, leaseMs: 300 })
    const held = await crashed.admit(ALICE, 'lost')
    expect(held.ok).toBe(true)
    lost.disconnect()
    expect((await alive.admit(ALICE, 'next')).ok).toBe(false)
    // The bound only catches a slot that is never freed.
    await expect
      .poll(async () => (await alive.admit(ALICE, 'next')).ok, { timeout: 10_000 })
      .toBe(true)
    if (held.ok) held.release()
  })

  it('refuses past REQUESTER_MAX_REQUESTS_PER_MINUTE over a sliding window, counted across processes', async () => {
    // A window of 5 s stands for the minute: a start leaves it by Redis's clock.
    const [a, b] = processes({ maxConcurrentRuns: 0, maxRequestsPerMinute: 3 }, 5_000)
    for (let index = 0; index < 3; index++) {
      const admitted = await (index % 2 === 0 ? a : b).admit(ALICE, `w${index}`)
      expect(admitted.ok).toBe(true)
      if (admitted.ok) admitted.release()
    }
    const refused = await b.admit(ALICE, 'w3')
    expect(refused).toMatchObject({ ok: false, reasonClass: 'requester_rate_limited' })
    expect(!refused.ok && refused.reason).toContain('REQUESTER_MAX_REQUESTS_PER_MINUTE (3)')
    expect((await a.admit(BOB, 'w4')).ok).toBe(true)
    // A start already counted is not counted twice (a redelivery within the window).
    expect((await a.admit(ALICE, 'w1')).ok).toBe(true)
    // The first starts leave the window once it has passed.
    await expect.poll(async () => (await a.admit(ALICE, 'w5')).ok, { timeout: 30_000 }).toBe(true)
  })

  it('0 turns both bounds off and costs no Redis call', async () => {
    const admission = new RequesterAdmission(
      { maxConcurrentRuns: 0, maxRequestsPerMinute: 0 },
      { redis: undefined as unknown as Redis, prefix: 'unused', chainId: CHAIN },
    )
    for (let index = 0; index < 1_000; index++)
      expect((await admission.admit(ALICE, `x${index}`)).ok).toBe(true)
  })
})

describe("the minimum contract payment: the job's, else the chain's, else a node's 10^13 juels", () => {
  const request = (payment: bigint) =>
    ({ requester: ALICE, payment }) as unknown as Parameters<typeof refusalOf>[1]
  it('a job without minContractPaymentLinkJuels refuses less than 10^13 juels (0.00001 LINK)', () => {
    expect(DEFAULT_MIN_CONTRACT_PAYMENT_JUELS).toBe(10n ** 13n)
    expect(BigInt(parseSettings({}).MIN_CONTRACT_PAYMENT_LINK_JUELS)).toBe(
      DEFAULT_MIN_CONTRACT_PAYMENT_JUELS,
    )
    // The runner's registry gives a job without a minimum its chain's (withChainDefaults).
    const runnerSpec = withChainDefaults({ type: 'directrequest' } as SpecOf<'directrequest'>, {
      minIncomingConfirmations: 1,
      minContractPaymentLinkJuels: DEFAULT_MIN_CONTRACT_PAYMENT_JUELS,
    })
    const refused = refusalOf(runnerSpec, request(1n))
    expect(refused?.code).toBe('payment_too_low')
    expect(refused?.message).toBe(
      "payment 0.000000000000000001 LINK is below the job's minimum of 0.00001 LINK (its minContractPaymentLinkJuels, else MIN_CONTRACT_PAYMENT_LINK_JUELS)",
    )
    expect(refusalOf(runnerSpec, request(10n ** 13n))).toBeUndefined()
  })
  it("the job's own minimum wins, lower or higher; 0 lets a request pay nothing", () => {
    expect(refusalOf({ minContractPaymentLinkJuels: 0n }, request(0n))).toBeUndefined()
    expect(refusalOf({ minContractPaymentLinkJuels: 10n ** 18n }, request(10n ** 17n))?.code).toBe(
      'payment_too_low',
    )
  })
})
