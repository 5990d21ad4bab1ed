import { AbiCoder, Interface, decodeBytes32String, id, type AbstractProvider } from 'ethers'

// Which token standards a contract implements, and its name/symbol/decimals, read from the chain.
// Every probe tolerates a contract that lacks the function (a revert or an empty answer means
// "no"), because tokens in the wild implement the optional parts of their standards or not.

/** ERC165 interface ids (EIP-165, EIP-721, EIP-1155). */
export const INTERFACE_IDS = {
  erc165: '0x01ffc9a7',
  invalid: '0xffffffff',
  erc721: '0x80ac58cd',
  erc1155: '0xd9b67a26',
} as const

/** The ERC1820 registry has the same address on every chain where it is deployed (EIP-1820). */
export const ERC1820_REGISTRY = '0x1820a4B7618BdE71Dce8cdc73aAB6C95905faD24'
const ERC777_INTERFACE_HASH = id('ERC777Token')

/** EIP-165 asks callers to give supportsInterface at most 30,000 gas. */
const ERC165_GAS = 30_000n

const probes = new Interface([
  'function supportsInterface(bytes4 interfaceId) view returns (bool)',
  'function getInterfaceImplementer(address account, bytes32 interfaceHash) view returns (address)',
  'function name() view returns (string)',
  'function symbol() view returns (string)',
  'function decimals() view returns (uint8)',
])
const abi = AbiCoder.defaultAbiCoder()

export interface TokenMetadata {
  name: string
  symbol: string
  /** Decimal string; "0" when the contract has no `decimals()` (ERC721, ERC1155). */
  decimals: string
}

export interface InterfaceSupport {
  erc721: boolean
  erc1155: boolean
  erc777: boolean
}

/** The raw answer of an eth_call, or undefined when the call reverted or the node refused it. */
async function tryCall(
  provider: AbstractProvider,
  to: string,
  data: string,
  gasLimit?: bigint,
): Promise<string | undefined> {
  try {
    const result = await provider.call({
      to,
      data,
      ...(gasLimit !== undefined ? { gasLimit } : {}),
    })
    return result === '0x' ? undefined : result
  } catch (error) {
    if (isRevert(error)) return undefined
    throw error
  }
}

/**
 * A call that executed and failed (revert, invalid opcode, out of gas), as opposed to a transport
 * error, which must reach the caller as a 502/503. ethers reports most as CALL_EXCEPTION; some
 * nodes' wording only shows in the message of an UNKNOWN_ERROR.
 */
function isRevert(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown }
  if (code === 'CALL_EXCEPTION' || code === 'BAD_DATA') return true
  return (
    code === 'UNKNOWN_ERROR' && /revert|execution|invalid opcode|out of gas/i.test(String(message))
  )
}

async function supportsInterface(
  provider: AbstractProvider,
  token: string,
  interfaceId: string,
): Promise<boolean> {
  const answer = await tryCall(
    provider,
    token,
    probes.encodeFunctionData('supportsInterface', [interfaceId]),
    ERC165_GAS,
  )
  if (answer === undefined || answer.length < 66) return false
  // EIP-165: the answer is a bool, exactly 0 or 1 in a 32-byte word.
  return BigInt(answer.slice(0, 66)) === 1n
}

/**
 * The EIP-165 detection procedure: the contract must claim ERC165 itself and deny the invalid id
 * 0xffffffff (so a fallback that answers "true" to everything is not taken at its word).
 */
export async function detectInterfaces(
  provider: AbstractProvider,
  token: string,
): Promise<InterfaceSupport> {
  const [erc165, invalid, erc721, erc1155, erc777] = await Promise.all([
    supportsInterface(provider, token, INTERFACE_IDS.erc165),
    supportsInterface(provider, token, INTERFACE_IDS.invalid),
    supportsInterface(provider, token, INTERFACE_IDS.erc721),
    supportsInterface(provider, token, INTERFACE_IDS.erc1155),
    isErc777(provider, token),
  ])
  const honest = erc165 && !invalid
  return { erc721: honest && erc721, erc1155: honest && erc1155, erc777 }
}

/**
 * ERC777 tokens register themselves in the ERC1820 registry under `keccak256("ERC777Token")`.
 * Without a registry on the chain (a fresh dev chain) no token can be ERC777.
 */
export async function isErc777(provider: AbstractProvider, token: string): Promise<boolean> {
  const registryCode = await provider.getCode(ERC1820_REGISTRY)
  if (registryCode === '0x') return false
  const answer = await tryCall(
    provider,
    ERC1820_REGISTRY,
    probes.encodeFunctionData('getInterfaceImplementer', [token, ERC777_INTERFACE_HASH]),
  )
  if (answer === undefined || answer.length < 66) return false
  const implementer = abi.decode(['address'], answer.slice(0, 66))[0] as string
  return implementer.toLowerCase() === token.toLowerCase()
}

/** A string answer, or a bytes32 one (early tokens such as MKR return their name as bytes32). */
function decodeText(answer: string | undefined): string {
  if (answer === undefined) return ''
  try {
    return abi.decode(['string'], answer)[0] as string
  } catch {
    try {
      return decodeBytes32String(answer.slice(0, 66)).trim()
    } catch {
      return ''
    }
  }
}

function decodeDecimals(answer: string | undefined): string {
  if (answer === undefined || answer.length < 66) return '0'
  const value = BigInt(answer.slice(0, 66))
  // A sane token has at most 255 decimals (uint8); anything else is not a decimals() answer.
  return value <= 255n ? value.toString() : '0'
}

/** name, symbol and decimals; a missing function reads as '' (name, symbol) or '0' (decimals). */
export async function readTokenMetadata(
  provider: AbstractProvider,
  token: string,
): Promise<TokenMetadata> {
  const [name, symbol, decimals] = await Promise.all([
    tryCall(provider, token, probes.encodeFunctionData('name')),
    tryCall(provider, token, probes.encodeFunctionData('symbol')),
    tryCall(provider, token, probes.encodeFunctionData('decimals')),
  ])
  return { name: decodeText(name), symbol: decodeText(symbol), decimals: decodeDecimals(decimals) }
}
