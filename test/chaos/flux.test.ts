import { describe, expect, it } from 'vitest'
import { fluxCaughtUp, fluxRecoveryMs, HEARTBEAT_SLACK_MS } from '../../chaos/flux.ts'
import type { FluxFacts, FluxTxFact, History } from '../../chaos/history.ts'
import { NODE_1, NODE_2, T0, cleanHistory, fault, invariantsOf, ms } from './history-fixtures.ts'

// The flux feed's invariants (chaos/flux.ts), handed doctored histories: a feed with a 5 s heartbeat
// whose rounds the chain holds, one submission each, with one thing wrong.

const IDLE = 5_000
const EXPECTED = 215n
const START = ms(T0)

/** Round `round`'s submission by `from`, mined in block `block` (index 0), sent at the block before. */
function submission(round: number, block: number, from = NODE_1, reverted = false): FluxTxFact {
  return {
    hash: `0x${round.toString(16).padStart(4, '0')}${from.slice(2, 6)}${'d'.repeat(58)}`,
    from,
    nonce: 100 + round,
    block,
    index: 0,
    round,
    reverted,
    sentAt: START + block * 1_000 - 500,
    sentAtHead: block - 1,
  }
}

/** Twelve rounds a heartbeat apart, from the schedule's start; the stack stopped after 60 s. */
async function withFlux(change: (flux: FluxFacts) => Partial<FluxFacts> = () => ({})) {
  const history = await cleanHistory()
  const txs = Array.from({ length: 12 }, (_, index) => submission(index + 1, 10 + index * 5))
  const flux: FluxFacts = {
    aggregator: `0x${'aa'.repeat(20)}`,
    idleMs: IDLE,
    expected: EXPECTED,
    txs,
    submissions: txs.map((tx) => ({
      round: tx.round!,
      oracle: tx.from,
      value: EXPECTED,
      block: tx.block,
      txHash: tx.hash,
    })),
    rounds: txs.map((tx) => ({
      round: tx.round!,
      startedBy: tx.from,
      block: tx.block,
      at: T0 + tx.block - 10,
    })),
  }
  return {
    ...history,
    startedAt: START,
    stoppedAt: START + 60_000,
    flux: { ...flux, ...change(flux) },
  } satisfies History
}

describe('the fault search invariants of a flux feed', () => {
  it('find nothing wrong when each round has one right submission and the heartbeat is met', async () => {
    const history = await withFlux()
    expect(invariantsOf(history)).toEqual([])
    expect(fluxCaughtUp(history, history.stoppedAt)).toBe(true)
  })

  it('find an oracle that submitted twice to a round, and a wrong value', async () => {
    const twice = await withFlux((flux) => ({
      submissions: [...flux.submissions, { ...flux.submissions[3]!, txHash: '0xbeef', block: 99 }],
    }))
    expect(invariantsOf(twice)).toEqual(['flux-one-per-round'])
    // Another oracle in the same round is no fault.
    const other = await withFlux((flux) => ({
      submissions: [...flux.submissions, { ...flux.submissions[3]!, oracle: NODE_2 }],
    }))
    expect(invariantsOf(other)).toEqual([])
    const wrong = await withFlux((flux) => ({
      submissions: flux.submissions.map((s, i) => (i === 2 ? { ...s, value: 216n } : s)),
    }))
    expect(invariantsOf(wrong)).toEqual(['flux-value'])
  })

  it('find a reverted transaction to the aggregator, excused only by what the chain shows', async () => {
    const late = submission(5, 31, NODE_1, true)
    const reverted = await withFlux((flux) => ({ txs: [...flux.txs, late] }))
    expect(invariantsOf(reverted)).toEqual(['flux-reverted'])
    // Another oracle's submission mined after the head it was sent at (30), before it: excused.
    const raced = await withFlux((flux) => ({
      txs: [...flux.txs, { ...submission(6, 31, NODE_2), index: 0 }, { ...late, index: 1 }],
    }))
    expect(invariantsOf(raced)).toEqual([])
    // The same submission mined at or before that head: the simulation saw it; not excused.
    const seen = await withFlux((flux) => ({
      txs: [...flux.txs, submission(6, 30, NODE_2), { ...late, index: 1 }],
    }))
    expect(invariantsOf(seen)).toEqual(['flux-reverted'])
    // A reorg that ended after it was sent and replaced its block: excused; not if the reorg dropped
    // its bytes for good (the node sent them again after the reorg).
    const reorg = fault({
      kind: 'reorg',
      fromMs: START + 29_000,
      toMs: START + 31_000,
      fromBlock: 30,
    })
    const reorged = { ...reverted, faults: [reorg] }
    expect(invariantsOf(reorged)).toEqual([])
    expect(invariantsOf({ ...reorged, gone: new Set([late.hash]) })).toEqual(['flux-reverted'])
  })

  it('find a heartbeat that stopped with the stack healthy, and excuse the time of a fault and its recovery', async () => {
    // No round after 25 s, the flush at 20-21 s: 35 s healthy after the recovery.
    const stopped = await withFlux((flux) => ({
      rounds: flux.rounds.filter((round) => round.at * 1000 < START + 26_000),
    }))
    const flushed = {
      ...stopped,
      faults: [fault({ kind: 'redis-flush', fromMs: START + 20_000, toMs: START + 21_000 })],
    }
    expect(invariantsOf(flushed)).toEqual(['flux-live'])
    expect(fluxCaughtUp(flushed, START + 40_000)).toBe(false)
    // The same, with rounds again once the recovery was over: a 24 s gap that only the fault covers.
    const back = Math.ceil((START + 21_000 + fluxRecoveryMs(5_000)) / 1_000)
    const resumed = {
      ...flushed,
      flux: {
        ...flushed.flux,
        rounds: [
          ...flushed.flux.rounds,
          { round: 13, startedBy: NODE_1, block: 60, at: back },
          { round: 14, startedBy: NODE_1, block: 65, at: back + 5 },
          { round: 15, startedBy: NODE_1, block: 70, at: back + 10 },
        ],
      },
      stoppedAt: ms(back + 12),
    }
    expect(invariantsOf(resumed)).toEqual([])
    expect(fluxCaughtUp(resumed, resumed.stoppedAt)).toBe(true)
    // A gap just over the heartbeat and its slack, with no fault at all.
    const slow = await withFlux((flux) => ({
      rounds: flux.rounds.map((round) =>
        round.round >= 6
          ? { ...round, at: round.at + (IDLE + HEARTBEAT_SLACK_MS) / 1_000 - 4 }
          : round,
      ),
    }))
    expect(invariantsOf(slow)).toEqual(['flux-live'])
  })

  it('are not read for a schedule without a flux feed', async () => {
    const history = await cleanHistory()
    expect(history.flux).toBeUndefined()
    expect(invariantsOf(history)).toEqual([])
    expect(fluxCaughtUp(history, history.stoppedAt)).toBe(true)
  })
})
