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

/** One transfer as its log shape says it, before the log's address and index are added. */
type Transfer = Omit<DecodedTransfer, 'tokenAddress' | 'logIndex'>

/** ERC20: `from` and `to` indexed, the value in data. */
function erc20(log: LogLike): Transfer[] {
  const [from, to] = [topicAddress(log.topics[1]), topicAddress(log.topics[2])]
  return [{ shape: 'erc20', from, to, amount: word(log.data, 0), tokenId: undefined }]
}

/** ERC721: the same event with the token id as a third indexed value and no data. */
function erc721(log: LogLike): Transfer[] {
  const tokenId = BigInt(log.topics[3] as string)
  const [from, to] = [topicAddress(log.topics[1]), topicAddress(log.topics[2])]
  return [{ shape: 'erc721', from, to, amount: tokenId, tokenId }]
}

/** Early NFTs (CryptoKitties): the same event with nothing indexed, all three values in data. */
function unindexed(log: LogLike): Transfer[] {
  const [from, to, value] = abi.decode(['address', 'address', 'uint256'], log.data) as unknown as [
    string,
    string,
    bigint,
  ]
  return [
    {
      shape: 'unindexed',
      from: from.toLowerCase(),
      to: to.toLowerCase(),
      amount: value,
      tokenId: undefined,
    },
  ]
}

/** ERC1155 TransferSingle: operator, from, to indexed; id and value in data. */
function erc1155Single(log: LogLike): Transfer[] {
  const [from, to] = [topicAddress(log.topics[2]), topicAddress(log.topics[3])]
  return [{ shape: 'erc1155', from, to, amount: word(log.data, 1), tokenId: word(log.data, 0) }]
}

/** ERC1155 TransferBatch: as TransferSingle, with arrays of ids and values of equal length. */
function erc1155Batch(log: LogLike): Transfer[] {
  const [ids, values] = abi.decode(['uint256[]', 'uint256[]'], log.data) as unknown as [
    bigint[],
    bigint[],
  ]
  if (ids.length !== values.length) return []
  const [from, to] = [topicAddress(log.topics[2]), topicAddress(log.topics[3])]
  return ids.map((tokenId, i) => ({
    shape: 'erc1155' as const,
    from,
    to,
    amount: values[i] as bigint,
    tokenId,
  }))
}

/** Each log shape a transfer comes in: its event, topic count, data words (if fixed), and reader. */
const SHAPES: ReadonlyArray<{
  topic: string
  topics: number
  words?: number
  decode: (log: LogLike) => Transfer[]
}> = [
  { topic: TOPICS.transfer, topics: 3, words: 1, decode: erc20 },
  { topic: TOPICS.transfer, topics: 4, words: 0, decode: erc721 },
  { topic: TOPICS.transfer, topics: 1, words: 3, decode: unindexed },
  { topic: TOPICS.transferSingle, topics: 4, words: 2, decode: erc1155Single },
  { topic: TOPICS.transferBatch, topics: 4, decode: erc1155Batch },
]

/** The transfers one log carries: none, one, or several for a TransferBatch. */
export function decodeTransferLog(log: LogLike): DecodedTransfer[] {
  const shape = SHAPES.find(
    ({ topic, topics, words }) =>
      log.topics[0] === topic &&
      log.topics.length === topics &&
      (words === undefined || wordCount(log.data) === words),
  )
  if (shape === undefined) return []
  const placed = { tokenAddress: log.address.toLowerCase(), logIndex: log.index }
  try {
    return shape.decode(log).map((transfer) => ({ ...placed, ...transfer }))
  } catch {
    // A log that only looks like a transfer (same topic, malformed body) is not a token transfer.
    return []
  }
}

/** Every token transfer of a receipt, in log order (a batch keeps its own order). */
export function decodeTransfers(logs: readonly LogLike[]): DecodedTransfer[] {
  return [...logs].sort((a, b) => a.index - b.index).flatMap(decodeTransferLog)
}
