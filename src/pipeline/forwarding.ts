import { Interface } from 'ethers'

/** Chainlink's AuthorizedForwarder, as far as a job's fulfilment goes through it. */
const forwarderInterface = new Interface(['function forward(address to, bytes data)'])

/** Calldata of `AuthorizedForwarder.forward(to, data)`. */
export function forwardCalldata(to: string, data: string): string {
  return forwarderInterface.encodeFunctionData('forward', [to, data])
}

/** The call inside `forward(to, data)` calldata, or undefined when the calldata is not one. */
export function unforwarded(calldata: string): { to: string; data: string } | undefined {
  if (!calldata.startsWith(forwarderInterface.getFunction('forward')!.selector)) return undefined
  try {
    const [to, data] = forwarderInterface.decodeFunctionData('forward', calldata)
    return { to: String(to), data: String(data) }
  } catch {
    return undefined
  }
}
