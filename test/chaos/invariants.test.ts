import { Wallet } from 'ethers'
import { describe, expect, it } from 'vitest'
import { operatorInterface } from '../../src/chain/operator.ts'
import { unwarp } from '../../chaos/chain-read.ts'
import { decodeBroadcasts } from '../../chaos/collect.ts'
import type { History, RunFact, SignedFact } from '../../chaos/history.ts'
import { checkInvariants, KNOWN_CLOSED_MARGIN_MS } from '../../chaos/invariants.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'

// The fault search's invariants (chaos/invariants.ts) read a schedule's history and nothing else:
// here they are handed doctored histories, each with one thing wrong, and must name it.

const KEY = new Wallet(ANVIL_PRIVATE_KEYS[1])
const NODE = KEY.address.toLowerCase()
const OPERATOR = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'
const A = `0x${'a1'.repeat(32)}`
const B = `0x${'b2'.repeat(32)}`
const T0 = 1_800_000_000

/** A fulfillOracleRequest2 of `requestId` at `nonce`, signed by the node key, as a runner sends it. */
async function signedFulfilment(
  requestId: string,
  nonce: number,
  options: { value?: bigint; tip?: bigint } = {},
): Promise<string> {
  const data = operatorInterface.encodeFunctionData('fulfillOracleRequest2', [
    requestId,
    0n,
    '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0',
    '0x12345678',
    BigInt(T0 + 300),
    `${requestId}${(options.value ?? 160n).toString(16).padStart(64, '0')}`,
  ])
  const tip = options.tip ?? 1_000_000_000n
  return KEY.signTransaction({
    type: 2,
    chainId: 31337n,
    nonce,
    to: OPERATOR,
    data,
    gasLimit: 500_000n,
    maxFeePerGas: tip * 3n,
    maxPriorityFeePerGas: tip,
  })
}

/** Two requests, each answered once by its own nonce, everything in order. */
async function cleanHistory(): Promise<History> {
  const signed = decodeBroadcasts([
    { at: T0 * 1000 + 1_000, raw: await signedFulfilment(A, 0) },
    { at: T0 * 1000 + 2_000, raw: await signedFulfilment(B, 1) },
  ])
  const [txA, txB] = signed as [SignedFact, SignedFact]
  const runs = new Map<string, RunFact | undefined>([
    [A, { state: 'fulfilled', txHash: txA.hash }],
    [B, { state: 'fulfilled', txHash: txB.hash }],
  ])
  return {
    requests: [
      { requestId: A, purpose: 'request:0', expected: 160n, block: 3, at: T0, expiresAt: T0 + 300 },
      {
        requestId: B,
        purpose: 'request:1',
        expected: 525n,
        block: 4,
        at: T0 + 1,
        expiresAt: T0 + 301,
      },
    ],
    responses: [
      { requestId: A, txHash: txA.hash, block: 5, at: T0 + 3, from: NODE, nonce: 0 },
      { requestId: B, txHash: txB.hash, block: 6, at: T0 + 4, from: NODE, nonce: 1 },
    ],
    cancels: [],
    values: new Map([
      [A, 160n],
      [B, 525n],
    ]),
    signed,
    keys: [{ address: NODE, latest: 2, pending: 2, inPool: 0 }],
    fates: new Map([
      [txA.hash, { block: 5, reverted: false }],
      [txB.hash, { block: 6, reverted: false }],
    ]),
    runs,
    stops: [{ part: 'runner-1', signal: 'SIGTERM', ms: 2_500, code: 0, overran: false }],
    startFailures: [],
    gone: new Set(),
  }
}

const invariantsOf = (history: History) =>
  checkInvariants(history).map((violation) => violation.invariant)

describe('the fault search invariants', () => {
  it('find nothing wrong in a clean history', async () => {
    expect(checkInvariants(await cleanHistory())).toEqual([])
  })

  it('catch a request answered twice', async () => {
    const history = await cleanHistory()
    history.responses.push({ ...history.responses[0]!, txHash: `0x${'cd'.repeat(32)}`, block: 7 })
    expect(invariantsOf(history)).toContain('fulfilled-once')
  })

  it('catch two different fulfilments signed for one nonce, and let a fee bump of the same one pass', async () => {
    const history = await cleanHistory()
    const bump = decodeBroadcasts([
      { at: T0 * 1000 + 4_000, raw: await signedFulfilment(A, 0, { tip: 2_000_000_000n }) },
    ])
    expect(bump[0]!.hash).not.toBe(history.signed[0]!.hash)
    expect(checkInvariants({ ...history, signed: [...history.signed, ...bump] })).toEqual([])

    const other = decodeBroadcasts([{ at: T0 * 1000 + 1_500, raw: await signedFulfilment(B, 0) }])
    const violations = checkInvariants({ ...history, signed: [...history.signed, ...other] })
    expect(violations.map((v) => v.invariant)).toEqual(['one-fulfilment-per-nonce'])
    expect(violations[0]!.detail).toContain('nonce 0')
    // Unless a reorg took the first away for good: its nonce was free again.
    const gone = new Set([history.signed[0]!.hash])
    expect(checkInvariants({ ...history, gone, signed: [...history.signed, ...other] })).toEqual([])
    // The same request with another value at the same nonce is another fulfilment too.
    const otherValue = decodeBroadcasts([
      { at: T0 * 1000 + 1_500, raw: await signedFulfilment(A, 0, { value: 161n }) },
    ])
    expect(invariantsOf({ ...history, signed: [...history.signed, ...otherValue] })).toEqual([
      'one-fulfilment-per-nonce',
    ])
  })

  it('catch a nonce gap left open', async () => {
    const history = await cleanHistory()
    history.keys = [{ address: NODE, latest: 2, pending: 4, inPool: 2 }]
    expect(invariantsOf(history)).toEqual(['no-nonce-gap'])
    history.keys = [{ address: NODE, latest: 2, pending: 2, inPool: 1 }]
    expect(invariantsOf(history)).toEqual(['no-nonce-gap'])
  })

  it('catch a request left open without a cause, and accept one recorded with its cause', async () => {
    const history = await cleanHistory()
    history.responses = history.responses.filter((response) => response.requestId !== B)
    const runs = new Map(history.runs)
    runs.set(B, { state: 'running' })
    expect(invariantsOf({ ...history, runs })).toEqual(['settled'])
    runs.set(B, undefined)
    expect(invariantsOf({ ...history, runs })).toEqual(['settled'])
    runs.set(B, { state: 'errored', reason: 'upstream: 502 from the feed service' })
    expect(invariantsOf({ ...history, runs })).toEqual([])
    // A request its consumer cancelled is settled by the chain.
    runs.set(B, { state: 'cancelled' })
    const cancels = [{ requestId: B, txHash: `0x${'ee'.repeat(32)}`, block: 9, at: T0 + 400 }]
    expect(invariantsOf({ ...history, cancels, runs })).toEqual([])
  })

  it('catch a run record that contradicts the chain', async () => {
    const history = await cleanHistory()
    const runs = new Map(history.runs)
    runs.set(A, { state: 'errored', reason: 'timeout' })
    expect(invariantsOf({ ...history, runs })).toEqual(['records-agree'])
    runs.set(A, { state: 'fulfilled', txHash: `0x${'12'.repeat(32)}` })
    expect(invariantsOf({ ...history, runs })).toEqual(['records-agree'])
    // A record Redis lost says nothing against the chain.
    runs.set(A, undefined)
    expect(invariantsOf({ ...history, runs })).toEqual([])
    // Fulfilled on the record, open on the chain: both invariants see it.
    const open = { ...history, responses: history.responses.slice(1) }
    runs.set(A, { state: 'fulfilled', txHash: history.signed[0]!.hash })
    const violations = checkInvariants({ ...open, fates: new Map(), runs })
    expect(violations.map((v) => v.invariant)).toEqual(['settled', 'records-agree'])
    expect(violations[0]!.detail).toContain('not on chain')
  })

  it('catch an answer after the expiry and a wrong value', async () => {
    const history = await cleanHistory()
    history.responses[1] = { ...history.responses[1]!, at: T0 + 302 }
    history.values = new Map([
      [A, 161n],
      [B, 525n],
    ])
    expect(invariantsOf(history).sort()).toEqual(['before-expiry', 'right-value'])
  })

  it('catch a fulfilment first sent well after its request was closed on chain', async () => {
    const history = await cleanHistory()
    const late = decodeBroadcasts([
      { at: (T0 + 3) * 1000 + KNOWN_CLOSED_MARGIN_MS + 1_000, raw: await signedFulfilment(A, 2) },
    ])
    const violations = checkInvariants({ ...history, signed: [...history.signed, ...late] })
    expect(violations.map((v) => v.invariant)).toEqual(['no-known-revert'])
    // Sent within the margin (it may have been simulated before the answer was mined): not counted.
    const close = decodeBroadcasts([
      { at: (T0 + 3) * 1000 + 2_000, raw: await signedFulfilment(A, 2) },
    ])
    expect(checkInvariants({ ...history, signed: [...history.signed, ...close] })).toEqual([])
  })

  it('catch a process that overran SIGTERM or failed to come back', async () => {
    const history = await cleanHistory()
    history.stops.push({
      part: 'worker',
      signal: 'SIGTERM',
      ms: 10_004,
      code: null,
      overran: true,
      tail: 'closing fetch workers',
    })
    history.stops.push({ part: 'runner-2', signal: 'SIGKILL', ms: 3, code: null, overran: false })
    history.startFailures.push('runner-2 did not start within 90000 ms')
    expect(invariantsOf(history)).toEqual(['sigterm-exit', 'restarts'])
  })

  it('catch a process that died by itself before the harness stopped it', async () => {
    const history = await cleanHistory()
    history.stops.push({
      part: 'runner-1',
      signal: 'SIGTERM',
      ms: 0,
      code: 1,
      overran: false,
      died: true,
      tail: 'HandedOverError: sender key 0x7099 lost its lease\n    at handOver\n\nNode.js v22.23.3',
    })
    expect(invariantsOf(history)).toEqual(['process-died'])
    expect(checkInvariants(history)[0]?.detail).toMatch(/HandedOverError.*at handOver$/)
  })
})

describe('unwarp', () => {
  it('takes clock jumps out of block times', () => {
    expect(unwarp([100, 101, 102, 500, 501, 502])).toEqual([100, 101, 102, 103, 104, 105])
    expect(unwarp([100, 102, 103])).toEqual([100, 102, 103])
  })
})
