import { describe, expect, it } from 'vitest'
import { unwarp } from '../../chaos/chain-read.ts'
import { withSendHeads } from '../../chaos/collect.ts'
import type { History, RunFact, SignedFact } from '../../chaos/history.ts'
import { checkInvariants } from '../../chaos/invariants.ts'
import {
  A,
  B,
  EXPIRATION,
  KEY_2,
  NODE_1,
  NODE_2,
  T0,
  broadcast,
  cleanHistory,
  fault,
  invariantsOf,
  mined,
  ms,
  unanswered,
} from './history-fixtures.ts'

// The fault search's invariants (chaos/invariants.ts) read a schedule's history and nothing else:
// here they are handed doctored histories, each with one thing wrong, and must name it. The tests
// that expect a violation of 'one-fulfilment', 'fulfilment-reverted', 'unexplained-failure' or
// 'stalled' each gave none on the invariants these replaced (a count of OracleResponse logs, which
// the Operator never writes twice, and a 10 s margin for reverts).

describe('the fault search invariants', () => {
  it('find nothing wrong in a clean history', async () => {
    expect(checkInvariants(await cleanHistory())).toEqual([])
  })

  it("catch a duplicate fulfilment by key 2 that reverted one second after key 1's answer", async () => {
    const history = await cleanHistory()
    // Sent at head 4, before key 1's answer was mined in block 5: the race two owners run.
    const duplicate = await broadcast(T0 + 2, 4, A, 0, { key: KEY_2 })
    const signed = [...history.signed, duplicate]
    const fulfilments = withSendHeads(
      [
        mined(signed[0]!, 5),
        mined(signed[1]!, 6),
        mined(duplicate, 6, { reverted: true, index: 1 }),
      ],
      signed,
    )
    const keys = [...history.keys, { address: NODE_2, latest: 1, pending: 1, inPool: 0 }]
    const violations = checkInvariants({ ...history, signed, fulfilments, keys })
    expect(violations.map((v) => v.invariant)).toEqual(['one-fulfilment'])
    expect(violations[0]!.detail).toContain(
      `${duplicate.hash.slice(0, 10)} by key ${NODE_2.slice(0, 10)}`,
    )
    expect(violations[0]!.detail).toContain('block 6, reverted')
  })

  it('catch a lone fulfilment that reverted with nothing to explain it', async () => {
    const history = await cleanHistory()
    const fulfilments = history.fulfilments.map((tx) =>
      tx.requestId === B ? { ...tx, reverted: true } : tx,
    )
    const runs = new Map(history.runs)
    runs.set(B, { state: 'errored', reason: 'reverted', failureKind: 'reverted', at: ms(T0 + 5) })
    const responses = history.responses.filter((response) => response.requestId !== B)
    expect(invariantsOf({ ...history, fulfilments, responses, runs })).toEqual([
      'fulfilment-reverted',
      'unexplained-failure',
    ])
  })

  it("excuse a reverted fulfilment when the requester's cancel was mined after the head it was sent at, and only then", async () => {
    const history = await cleanHistory()
    // B cancelled in block 7; key 1's fulfilment of B was sent at head 6 and mined after the cancel.
    const sent = await broadcast(T0 + 5, 6, B, 1)
    const base = unanswered(history, { state: 'cancelled', at: ms(T0 + 7) })
    const cancels = [
      { requestId: B, txHash: `0x${'ee'.repeat(32)}`, block: 7, index: 1, at: T0 + 6 },
    ]
    const withFulfilment = (tx: SignedFact, block: number, index: number) => ({
      ...base,
      cancels,
      signed: [...base.signed, tx],
      fulfilments: [
        ...base.fulfilments,
        ...withSendHeads([mined(tx, block, { reverted: true, index })], [tx]),
      ],
      keys: [{ address: NODE_1, latest: 2, pending: 2, inPool: 0 }],
    })
    expect(checkInvariants(withFulfilment(sent, 7, 2))).toEqual([])
    expect(checkInvariants(withFulfilment(sent, 9, 0))).toEqual([])
    // Mined before the cancel in the same block: the cancel does not explain it.
    expect(invariantsOf(withFulfilment(sent, 7, 0))).toEqual(['fulfilment-reverted'])
    // Sent once the cancel was mined (head 7): the simulation would have said so.
    const late = await broadcast(T0 + 6, 7, B, 1)
    expect(invariantsOf(withFulfilment(late, 8, 0))).toEqual(['fulfilment-reverted'])
  })

  it('count a fee bump as the transaction it replaces, sent at the head of the first attempt', async () => {
    const history = await cleanHistory()
    // B's first attempt at head 5, before its cancel in block 7; the bump (not simulated again) at head 8.
    const first = await broadcast(T0 + 2, 5, B, 1)
    const bump = await broadcast(T0 + 9, 8, B, 1, { tip: 2_000_000_000n })
    expect(bump.hash).not.toBe(first.hash)
    const base = unanswered(history, { state: 'cancelled', at: ms(T0 + 7) })
    const signed = [...base.signed, first, bump]
    const cancels = [
      { requestId: B, txHash: `0x${'ee'.repeat(32)}`, block: 7, index: 0, at: T0 + 6 },
    ]
    const bumped = {
      ...base,
      cancels,
      signed,
      fulfilments: [
        ...base.fulfilments,
        ...withSendHeads([mined(bump, 9, { reverted: true })], signed),
      ],
      keys: [{ address: NODE_1, latest: 2, pending: 2, inPool: 0 }],
    }
    expect(bumped.fulfilments.at(-1)?.sentAtHead).toBe(5)
    expect(checkInvariants(bumped)).toEqual([])
    // A's answer was a bump too: two attempts of one nonce, one transaction on chain.
    const bumpA = await broadcast(T0 + 3, 5, A, 0, { tip: 2_000_000_000n })
    const answeredByBump = await cleanHistory()
    answeredByBump.signed.push(bumpA)
    answeredByBump.fulfilments = withSendHeads(
      [mined(bumpA, 5), mined(answeredByBump.signed[1]!, 6)],
      answeredByBump.signed,
    )
    answeredByBump.responses[0] = { ...answeredByBump.responses[0]!, txHash: bumpA.hash }
    answeredByBump.runs = new Map([
      ...answeredByBump.runs,
      [A, { state: 'fulfilled', txHash: bumpA.hash }],
    ])
    expect(checkInvariants(answeredByBump)).toEqual([])
  })

  it('excuse a fulfilment a reorg made revert by mining its request again with another expiry', async () => {
    const history = await cleanHistory()
    // B was mined again in block 6 with another cancelExpiration; its first fulfilment, sent before
    // the reorg, reverted in block 6; a second one, for the new expiry, answered it.
    const requests = history.requests.map((request) =>
      request.requestId === B
        ? { ...request, block: 6, cancelExpiration: EXPIRATION + 2n }
        : request,
    )
    const stale = { ...history.fulfilments[1]!, block: 6, reverted: true }
    const answer = {
      ...stale,
      hash: `0x${'cc'.repeat(32)}`,
      nonce: 2,
      block: 8,
      reverted: false,
      expiration: EXPIRATION + 2n,
    }
    const reorg = fault({ kind: 'reorg', fromMs: ms(T0 + 3), toMs: ms(T0 + 4), fromBlock: 5 })
    const responses = [
      history.responses[0]!,
      { ...history.responses[1]!, txHash: answer.hash, block: 8 },
    ]
    const runs = new Map([...history.runs, [B, { state: 'fulfilled', txHash: answer.hash }]])
    const reorged = {
      ...history,
      requests,
      responses,
      runs,
      fulfilments: [history.fulfilments[0]!, stale, answer],
      keys: [{ address: NODE_1, latest: 3, pending: 3, inPool: 0 }],
    }
    expect(invariantsOf({ ...reorged, faults: [reorg] })).toEqual([])
    // Without the reorg, or with the fulfilment sent after it, nothing explains the revert.
    expect(invariantsOf(reorged)).toEqual(['one-fulfilment'])
    const earlyReorg = { ...reorg, fromMs: ms(T0), toMs: ms(T0 + 1) }
    expect(invariantsOf({ ...reorged, faults: [earlyReorg] })).toEqual(['one-fulfilment'])
    // Nor when the reorg dropped those bytes: mined later, the node had sent them again after it.
    const resent = { ...reorged, faults: [reorg], gone: new Set([stale.hash]) }
    expect(invariantsOf(resent)).toEqual(['one-fulfilment'])
  })

  it('catch every request errored by a cause no fault covers, and excuse one a fault covers', async () => {
    const history = await cleanHistory()
    const errored = (at: number, failureKind: RunFact['failureKind']): RunFact => ({
      state: 'errored',
      reason: 'upstream: 502 from the feed service',
      failureKind,
      at: ms(at),
    })
    const nothingAnswered: History = {
      ...history,
      responses: [],
      fulfilments: [],
      signed: [],
      values: new Map(),
      fates: new Map(),
      keys: [{ address: NODE_1, latest: 0, pending: 0, inPool: 0 }],
      runs: new Map([
        [A, errored(T0 + 2, 'upstream')],
        [B, errored(T0 + 3, 'upstream')],
      ]),
    }
    const violations = checkInvariants(nothingAnswered)
    expect(violations.map((v) => v.invariant)).toEqual([
      'unexplained-failure',
      'unexplained-failure',
    ])
    expect(violations[0]!.detail).toContain('errored (upstream) at 7.0 s, a cause no fault covers')
    // The feed service was down then: both are excused.
    const feedsDown = fault({ kind: 'kill', part: 'feeds', fromMs: ms(T0 + 1), toMs: ms(T0 + 2) })
    expect(checkInvariants({ ...nothingAnswered, faults: [feedsDown] })).toEqual([])
    // No fault covers a bug, nor a failure long after the fault and its recovery (30 s here).
    const runs = new Map([
      [A, errored(T0 + 2, 'internal')],
      [B, errored(T0 + 40, 'upstream')],
    ])
    const stoppedAt = ms(T0 + 41)
    expect(invariantsOf({ ...nothingAnswered, runs, stoppedAt, faults: [feedsDown] })).toEqual([
      'unexplained-failure',
      'unexplained-failure',
    ])
    // A run quarantined after its runner was stopped twice is the runner's stop's doing.
    const quarantined: RunFact = { ...errored(T0 + 9, 'internal'), quarantined: true }
    const runnerStop = fault({
      kind: 'kill',
      part: 'runner-1',
      stopsRunner: true,
      toMs: ms(T0 + 4),
    })
    const quarantinedRuns = new Map([...nothingAnswered.runs, [A, quarantined]])
    expect(
      invariantsOf({ ...nothingAnswered, runs: quarantinedRuns, faults: [feedsDown, runnerStop] }),
    ).toEqual([])
    expect(
      invariantsOf({ ...nothingAnswered, runs: quarantinedRuns, faults: [feedsDown] }),
    ).toEqual(['unexplained-failure'])
  })

  it('catch a request open longer than the bound with the stack healthy', async () => {
    const history = await cleanHistory()
    history.responses[1] = { ...history.responses[1]!, at: T0 + 45 }
    history.stoppedAt = ms(T0 + 50)
    expect(invariantsOf(history)).toEqual(['stalled'])
    // An RPC cut until T0 + 10 and its recovery (30 s with a 5 s lock) leave 5 s of healthy time.
    const cut = fault({ kind: 'rpc-cut', fromMs: ms(T0 + 2), toMs: ms(T0 + 10) })
    expect(checkInvariants({ ...history, faults: [cut] })).toEqual([])
    // Cancelled by the harness, or past its expiry by a cancel storm's clock jump: excused, not stalled.
    const open = unanswered(
      { ...history, stoppedAt: ms(T0 + 20) },
      { state: 'refused', reason: 'past its cancelExpiration', at: ms(T0 + 12) },
    )
    const expired = { ...open, requests: open.requests.map((r) => ({ ...r, expired: true })) }
    const storm = fault({
      kind: 'cancel-storm',
      stopsRunner: true,
      fromMs: ms(T0 + 2),
      toMs: ms(T0 + 8),
    })
    expect(checkInvariants({ ...expired, faults: [storm] })).toEqual([])
    expect(invariantsOf(expired)).toEqual(['unexplained-failure'])
    // Refused by requester admission at once: the node decided, however long the request stays
    // open on chain after; refused only after the bound, it stalled before it decided.
    const refusedAt = (seconds: number) =>
      unanswered(
        { ...history, stoppedAt: ms(T0 + 90) },
        {
          state: 'refused',
          reason: 'requester busy',
          failureCode: 'requester_busy',
          at: ms(T0 + seconds),
        },
      )
    expect(invariantsOf(refusedAt(2))).toEqual([])
    expect(invariantsOf(refusedAt(60))).toEqual(['stalled'])
  })

  it('catch two different fulfilments signed for one nonce, and let a fee bump of the same one pass', async () => {
    const history = await cleanHistory()
    const bump = await broadcast(T0 + 4, 5, A, 0, { tip: 2_000_000_000n })
    expect(bump.hash).not.toBe(history.signed[0]!.hash)
    expect(checkInvariants({ ...history, signed: [...history.signed, bump] })).toEqual([])

    const other = await broadcast(T0 + 1.5, 4, B, 0)
    const violations = checkInvariants({ ...history, signed: [...history.signed, other] })
    expect(violations.map((v) => v.invariant)).toEqual(['one-fulfilment-per-nonce'])
    expect(violations[0]!.detail).toContain('nonce 0')
    // Unless a reorg took the first away for good: its nonce was free again.
    const gone = new Set([history.signed[0]!.hash])
    expect(checkInvariants({ ...history, gone, signed: [...history.signed, other] })).toEqual([])
    // The same request with another value at the same nonce is another fulfilment too.
    const otherValue = await broadcast(T0 + 1.5, 4, A, 0, { value: 161n })
    expect(invariantsOf({ ...history, signed: [...history.signed, otherValue] })).toEqual([
      'one-fulfilment-per-nonce',
    ])
  })

  it('catch a nonce gap left open', async () => {
    const history = await cleanHistory()
    history.keys = [{ address: NODE_1, latest: 2, pending: 4, inPool: 2 }]
    expect(invariantsOf(history)).toEqual(['no-nonce-gap'])
    history.keys = [{ address: NODE_1, latest: 2, pending: 2, inPool: 1 }]
    expect(invariantsOf(history)).toEqual(['no-nonce-gap'])
  })

  it('catch a request left open without a cause', async () => {
    const history = await cleanHistory()
    expect(invariantsOf(unanswered(history, { state: 'running' }))).toEqual(['settled'])
    expect(invariantsOf(unanswered(history, undefined))).toEqual(['settled'])
    // Recorded with a cause a fault covers: settled, and excused.
    const errored = {
      state: 'errored',
      reason: '502',
      failureKind: 'upstream' as const,
      at: ms(T0 + 3),
    }
    const feedsDown = fault({ kind: 'kill', part: 'feeds' })
    expect(invariantsOf({ ...unanswered(history, errored), faults: [feedsDown] })).toEqual([])
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
    const open = {
      ...history,
      responses: history.responses.slice(1),
      fulfilments: history.fulfilments.slice(1),
    }
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
    // A cancel storm held it open (and its recovery after): late, but not stalled.
    history.faults = [fault({ kind: 'cancel-storm', stopsRunner: true, toMs: ms(T0 + 290) })]
    expect(invariantsOf(history).sort()).toEqual(['before-expiry', 'right-value'])
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
