import { formatUnits, getAddress } from 'ethers'
import type { OracleRequestEvent } from '../chain/operator.ts'
import type { JobSpecFields } from '../pipeline/index.ts'

/**
 * Why a request must not run, per the job's `requesters` and `minContractPaymentLinkJuels`, or
 * undefined when it may. Refused requests are recorded with this reason, never dropped silently.
 */
export function refusalReason(
  spec: Pick<JobSpecFields, 'requesters' | 'minContractPaymentLinkJuels'>,
  request: OracleRequestEvent,
): string | undefined {
  if (spec.requesters && spec.requesters.length > 0) {
    const requester = getAddress(request.requester)
    if (!spec.requesters.some((allowed) => getAddress(allowed) === requester)) {
      return `requester ${requester} is not in the job's requesters`
    }
  }
  const minimum = spec.minContractPaymentLinkJuels
  if (minimum !== undefined && request.payment < minimum) {
    return `payment ${formatUnits(request.payment, 18)} LINK is below the job's minimum of ${formatUnits(minimum, 18)} LINK`
  }
  return undefined
}
