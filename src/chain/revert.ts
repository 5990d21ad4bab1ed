import { AbiCoder, isCallException } from 'ethers'

const ERROR_STRING_SELECTOR = '0x08c379a0'
const PANIC_SELECTOR = '0x4e487b71'

/** The reason in revert data: `Error(string)`, `Panic(uint256)`, or the raw data. */
export function decodeRevertData(data: string | null | undefined): string | undefined {
  if (!data || data === '0x') return undefined
  try {
    if (data.startsWith(ERROR_STRING_SELECTOR)) {
      return AbiCoder.defaultAbiCoder().decode(['string'], `0x${data.slice(10)}`)[0] as string
    }
    if (data.startsWith(PANIC_SELECTOR)) {
      const code = AbiCoder.defaultAbiCoder().decode(
        ['uint256'],
        `0x${data.slice(10)}`,
      )[0] as bigint
      return `panic 0x${code.toString(16)}`
    }
  } catch {
    // Malformed revert data: fall through to the raw bytes.
  }
  return `custom error ${data.slice(0, 10)}`
}

/** A revert reason from an ethers error of `call`/`estimateGas`, or undefined when it is not a revert. */
export function revertReasonOf(error: unknown): string | undefined {
  if (!isCallException(error)) return undefined
  return error.reason ?? decodeRevertData(error.data) ?? 'reverted without a reason'
}
