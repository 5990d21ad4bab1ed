import { readOperatorLogs } from './chain-read.ts'
import { warp } from './chain-faults.ts'
import { restart, stopPart, type RunContext } from './context.ts'
import { Random } from './random.ts'
import { rpc } from './rpc.ts'
import { runsRunner, type FaultPlan } from './schedule.ts'

type CancelStorm = Extract<FaultPlan, { kind: 'cancel-storm' }>

/** How long the harness waits for its own transactions to be mined. */
const MINED_BOUND_MS = 60_000

/**
 * Every runner stops; requests are made that nobody answers; the chain's clock jumps past the
 * Operator's 5-minute expiry; the consumers cancel the storm's requests and a share of the other
 * requests still open; then the runners start again and find requests cancelled under them.
 */
export async function cancelStorm(context: RunContext, fault: CancelStorm): Promise<string> {
  const { stack, book, schedule } = context
  const runners = [...stack.parts.values()].filter((part) => runsRunner(part.spec.kind))
  await Promise.all(runners.map((part) => stopPart(context, part, fault.signal)))
  for (const [index, plan] of fault.requests.entries()) await book.send(plan, `storm:${index}`)
  await stack.wallet.allMined(MINED_BOUND_MS)
  await warp(stack.anvil.rpcUrl, fault.warpSeconds)

  const { operator, consumer } = stack.contracts.addresses
  const logs = await readOperatorLogs(stack.anvil.rpcUrl, operator, consumer)
  const closed = new Set([...logs.responses, ...logs.cancels].map((event) => event.requestId))
  const head = await rpc<{ timestamp: string }>(stack.anvil.rpcUrl, 'eth_getBlockByNumber', [
    'latest',
    false,
  ])
  // The next block is at least a second later than the head: a request expired by then may be cancelled.
  const now = BigInt(head.timestamp) + 1n
  const cancelled = logs.requests.filter((request) => {
    if (closed.has(request.requestId) || request.cancelExpiration > now) return false
    const purpose = book.purposeOf(request.txHash)
    if (purpose === undefined) return false
    return (
      purpose.startsWith('storm:') ||
      new Random(schedule.seed).fork(purpose).next() < fault.cancelShare
    )
  })
  for (const request of cancelled)
    await stack.wallet.cancel(request.requestId, request.cancelExpiration, request.requester)
  await stack.wallet.allMined(MINED_BOUND_MS)
  await Promise.all(runners.map((part) => restart(context, part)))
  return `${runners.length} runners ${fault.signal}, ${fault.requests.length} requests made, clock +${fault.warpSeconds} s, ${cancelled.length} cancelled`
}
