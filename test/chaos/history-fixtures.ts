import { Wallet } from 'ethers'
import { operatorInterface } from '../../src/chain/operator.ts'
import type { MinedFulfilment } from '../../chaos/chain-read.ts'
import { decodeBroadcasts, withSendHeads } from '../../chaos/collect.ts'
import type { FaultWindow, History, RunFact, SignedFact } from '../../chaos/history.ts'
import { checkInvariants } from '../../chaos/invariants.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'

// Doctored histories for the fault search's invariants and report: a clean one to start from, and
// the pieces to change it with (fulfilments signed by real keys, as a runner signs them).

export const KEY_1 = new Wallet(ANVIL_PRIVATE_KEYS[1])
export const KEY_2 = new Wallet(ANVIL_PRIVATE_KEYS[2])
export const NODE_1 = KEY_1.address.toLowerCase()
export const NODE_2 = KEY_2.address.toLowerCase()
const OPERATOR = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'
export const A = `0x${'a1'.repeat(32)}`
export const B = `0x${'b2'.repeat(32)}`
export const T0 = 1_800_000_000
export const EXPIRATION = BigInt(T0 + 300)
export const ms = (seconds: number) => seconds * 1000

/** A fulfillOracleRequest2 of `requestId` at `nonce`, signed by a node key, as a runner sends it. */
export async function signedFulfilment(
  requestId: string,
  nonce: number,
  options: { value?: bigint; tip?: bigint; key?: Wallet } = {},
): Promise<string> {
  const data = operatorInterface.encodeFunctionData('fulfillOracleRequest2', [
    requestId,
    0n,
    '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0',
    '0x12345678',
    EXPIRATION,
    `${requestId}${(options.value ?? 160n).toString(16).padStart(64, '0')}`,
  ])
  const tip = options.tip ?? 1_000_000_000n
  return (options.key ?? KEY_1).signTransaction({
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

/** A broadcast as the RPC proxy keeps it: when it first saw it, the head then, the raw bytes. */
export async function broadcast(
  atSeconds: number,
  head: number,
  ...args: Parameters<typeof signedFulfilment>
): Promise<SignedFact> {
  return decodeBroadcasts([{ at: ms(atSeconds), head, raw: await signedFulfilment(...args) }])[0]!
}

/** `tx` as the chain mined it. */
export function mined(
  tx: SignedFact,
  block: number,
  options: { reverted?: boolean; index?: number } = {},
) {
  return {
    requestId: tx.fulfils!,
    expiration: EXPIRATION,
    hash: tx.hash,
    from: tx.from,
    nonce: tx.nonce,
    block,
    index: options.index ?? 0,
    reverted: options.reverted ?? false,
  } satisfies MinedFulfilment
}

/** Two requests, each answered once by its own nonce, everything in order, no fault. */
export async function cleanHistory(): Promise<History> {
  const txA = await broadcast(T0 + 1, 4, A, 0)
  const txB = await broadcast(T0 + 2, 5, B, 1)
  const runs = new Map<string, RunFact | undefined>([
    [A, { state: 'fulfilled', txHash: txA.hash }],
    [B, { state: 'fulfilled', txHash: txB.hash }],
  ])
  const request = { expiresAt: T0 + 300, cancelExpiration: EXPIRATION, expired: false, index: 0 }
  return {
    requests: [
      { requestId: A, purpose: 'request:0', expected: 160n, block: 3, at: T0, ...request },
      { requestId: B, purpose: 'request:1', expected: 525n, block: 4, at: T0 + 1, ...request },
    ],
    responses: [
      { requestId: A, txHash: txA.hash, block: 5, index: 0, at: T0 + 3, from: NODE_1, nonce: 0 },
      { requestId: B, txHash: txB.hash, block: 6, index: 0, at: T0 + 4, from: NODE_1, nonce: 1 },
    ],
    fulfilments: withSendHeads([mined(txA, 5), mined(txB, 6)], [txA, txB]),
    cancels: [],
    pushes: [],
    values: new Map([
      [A, 160n],
      [B, 525n],
    ]),
    signed: [txA, txB],
    keys: [{ address: NODE_1, latest: 2, pending: 2, inPool: 0 }],
    fates: new Map([
      [txA.hash, { block: 5, reverted: false }],
      [txB.hash, { block: 6, reverted: false }],
    ]),
    runs,
    stops: [{ part: 'runner-1', signal: 'SIGTERM', ms: 2_500, code: 0, overran: false }],
    startFailures: [],
    gone: new Set(),
    faults: [],
    lockMs: 5_000,
    startedAt: ms(T0 - 5),
    stoppedAt: ms(T0 + 20),
  }
}

export const invariantsOf = (history: History) =>
  checkInvariants(history).map((violation) => violation.invariant)

/** B not answered: its answer, its fulfilment and its value taken out, its run as given. */
export function unanswered(history: History, run: RunFact | undefined): History {
  const runs = new Map(history.runs)
  runs.set(B, run)
  return {
    ...history,
    responses: history.responses.filter((response) => response.requestId !== B),
    fulfilments: history.fulfilments.filter((tx) => tx.requestId !== B),
    signed: history.signed.filter((tx) => tx.fulfils !== B),
    keys: [{ address: NODE_1, latest: 1, pending: 1, inPool: 0 }],
    runs,
  }
}

export const fault = (window: Partial<FaultWindow> & Pick<FaultWindow, 'kind'>): FaultWindow => ({
  label: window.kind,
  stopsRunner: false,
  fromMs: ms(T0),
  toMs: ms(T0 + 2),
  ...window,
})
