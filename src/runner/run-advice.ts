import type { RunRecord } from './run-record.ts'

const JUELS_PER_LINK = 10n ** 18n

/**
 * An amount of juels in LINK as ethers's formatUnits(juels, 18) writes it ("0.1", "2.0"): `runs show`
 * and `status` print payments without loading ethers for it.
 */
export function linkAmount(juels: bigint): string {
  const size = juels < 0n ? -juels : juels
  const fraction = (size % JUELS_PER_LINK).toString().padStart(18, '0').replace(/0+$/, '')
  return `${juels < 0n ? '-' : ''}${size / JUELS_PER_LINK}.${fraction || '0'}`
}

/**
 * What the requester of an errored run can do, in words: its payment stays escrowed in the Operator
 * until cancelExpiration, after which the consumer can cancel the request and take the payment back.
 * `nowSeconds` is the chain's time (the Operator compares with block.timestamp), or the clock's.
 */
export function requesterAdvice(run: RunRecord, nowSeconds: number): string[] {
  if (run.state !== 'errored' || run.cancelExpiration === undefined) return []
  const expiration = Number(run.cancelExpiration)
  const payment = `${linkAmount(BigInt(run.payment || '0'))} LINK`
  const at = new Date(expiration * 1000).toISOString()
  const left = expiration - nowSeconds
  const lines = [
    `The requester ${run.requester} paid ${payment}; it stays escrowed in the Operator ${run.operator} until the request's cancelExpiration, ${at}${left > 0 ? ` (${duration(left)} from now)` : ' (passed)'}.`,
  ]
  if (left > 0)
    lines.push(
      `Until then the operator can fix the cause and run it again: feedrunner runs replay ${run.requestId}`,
      `After it, the consumer can call cancelOracleRequest(${run.requestId}, ${run.payment}, ${run.callbackFunctionId ?? '<callback selector>'}, ${run.cancelExpiration}) on the Operator (ChainlinkClient: _cancelChainlinkRequest) to take the payment back, and ask again.`,
    )
  else
    lines.push(
      `The consumer can now call cancelOracleRequest(${run.requestId}, ${run.payment}, ${run.callbackFunctionId ?? '<callback selector>'}, ${run.cancelExpiration}) on the Operator (ChainlinkClient: _cancelChainlinkRequest) to take the payment back, and ask again; it is past replaying.`,
    )
  return lines
}

/** The replays of a run, one line each, oldest first. */
export function replayHistory(run: RunRecord): string[] {
  return (run.replays ?? []).map(
    (replay, index) =>
      `replay ${index + 1} at ${new Date(replay.at).toISOString()}${replay.previousReason ? `, after: ${replay.previousReason}` : ''}`,
  )
}

function duration(seconds: number): string {
  const minutes = Math.floor(seconds / 60)
  if (minutes < 1) return `${seconds} s`
  if (minutes < 120) return `${minutes} min ${seconds % 60} s`
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`
}
