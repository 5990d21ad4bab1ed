import { AbiCoder, getAddress, id } from 'ethers'

// Token transfers read from a receipt's logs by their shape alone (no ABI of the token needed).
// The same event signature `Transfer(address,address,uint256)` serves ERC20 (value in data, three
// topics) and ERC721 (token id as a fourth topic); some early NFTs (CryptoKitties) index nothing
// and put all three values in data. ERC1155 has its own TransferSingle and TransferBatch.

export const TOPICS = {
  transfer: id('Transfer(address,address,uint256)'),
  transferSingle: id('TransferSingle(address,address,address,uint256,uint256)'),
  transferBatch: id('TransferBatch(address,address,address,uint256[],uint256[])'),
} as const

/** Which log shape a transfer came from; it decides the token standard flags together with ERC165. */
export type TransferShape = 'erc20' | 'erc721' | 'unindexed' | 'erc1155'

export interface DecodedTransfer {
  shape: TransferShape
  tokenAddress: string
  from: string
  to: string
  /** Token units for ERC20 and ERC1155; the token id for ERC721 (FEEDS.md: "for ERC721 it holds the token id"). */
  amount: bigint
  /** The token id of an ERC721 or ERC1155 transfer; undefined for ERC20. */
  tokenId: bigint | undefined
  logIndex: number
}

/** The parts of a log this module reads (an ethers Log satisfies it). */
export interface LogLike {
  address: string
  topics: readonly string[]
  data: string
  index: number
}

const abi = AbiCoder.defaultAbiCoder()

function topicAddress(topic: string | undefined): string {
  if (topic === undefined || !/^0x0{24}[0-9a-fA-F]{40}$/.test(topic))
    throw new Error('not an address topic')
  return getAddress(`0x${topic.slice(26)}`).toLowerCase()
}

function word(data: string, index: number): bigint {
  return BigInt(`0x${data.slice(2 + index * 64, 2 + (index + 1) * 64)}`)
}

function wordCount(data: string): number {
  return (data.length - 2) / 64
}

/** The transfers one log carries: none, one, or several for a TransferBatch. */
export function decodeTransferLog(log: LogLike): DecodedTransfer[] {
  const [topic0] = log.topics
  const tokenAddress = log.address.toLowerCase()
  const base = { tokenAddress, logIndex: log.index }
  try {
    if (topic0 === TOPICS.transfer && log.topics.length === 3 && wordCount(log.data) === 1) {
      return [
        {
          ...base,
          shape: 'erc20',
          from: topicAddress(log.topics[1]),
          to: topicAddress(log.topics[2]),
          amount: word(log.data, 0),
          tokenId: undefined,
        },
      ]
    }
    if (topic0 === TOPICS.transfer && log.topics.length === 4 && wordCount(log.data) === 0) {
      const tokenId = BigInt(log.topics[3] as string)
      return [
        {
          ...base,
          shape: 'erc721',
          from: topicAddress(log.topics[1]),
          to: topicAddress(log.topics[2]),
          amount: tokenId,
          tokenId,
        },
      ]
    }
    if (topic0 === TOPICS.transfer && log.topics.length === 1 && wordCount(log.data) === 3) {
      const [from, to, value] = abi.decode(
        ['address', 'address', 'uint256'],
        log.data,
      ) as unknown as [string, string, bigint]
      return [
        {
          ...base,
          shape: 'unindexed',
          from: from.toLowerCase(),
          to: to.toLowerCase(),
          amount: value,
          tokenId: undefined,
        },
      ]
    }
    if (topic0 === TOPICS.transferSingle && log.topics.length === 4 && wordCount(log.data) === 2) {
      const [tokenId, value] = [word(log.data, 0), word(log.data, 1)]
      return [
        {
          ...base,
          shape: 'erc1155',
          from: topicAddress(log.topics[2]),
          to: topicAddress(log.topics[3]),
          amount: value,
          tokenId,
        },
      ]
    }
    if (topic0 === TOPICS.transferBatch && log.topics.length === 4) {
      const [ids, values] = abi.decode(['uint256[]', 'uint256[]'], log.data) as unknown as [
        bigint[],
        bigint[],
      ]
      if (ids.length !== values.length) return []
      const from = topicAddress(log.topics[2])
      const to = topicAddress(log.topics[3])
      return ids.map((tokenId, i) => ({
        ...base,
        shape: 'erc1155' as const,
        from,
        to,
        amount: values[i] as bigint,
        tokenId,
      }))
    }
  } catch {
    // A log that only looks like a transfer (same topic, malformed body) is not a token transfer.
    return []
  }
  return []
}

/** Every token transfer of a receipt, in log order (a batch keeps its own order). */
export function decodeTransfers(logs: readonly LogLike[]): DecodedTransfer[] {
  return [...logs].sort((a, b) => a.index - b.index).flatMap(decodeTransferLog)
}
