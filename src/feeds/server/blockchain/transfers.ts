import type { AbstractProvider } from 'ethers'
import { FeedServiceError } from '../errors.ts'
import { decimal } from './format.ts'
import {
  detectInterfaces,
  readTokenMetadata,
  type InterfaceSupport,
  type TokenMetadata,
} from './token-standards.ts'
import { decodeTransfers, type DecodedTransfer } from './transfer-logs.ts'

// The `token-transfers` record. FEEDS.md's `data` is ONE transfer object, while a transaction can
// move several tokens (a swap, a batch): `data` is the FIRST token transfer of the transaction in
// log order (the first entry of a TransferBatch for a batch), and the extra field `transfers` lists
// every transfer of the transaction in the same shape, so a path such as `transfers.1.amount`
// reaches the others. `tokenId` (extra) carries the id of an ERC721/ERC1155 transfer, null for ERC20.
// `logIndex` is the log's index in its block, as JSON-RPC and Amberdata number logs (FEEDS.md says
// "in the transaction", but the sample's 39 is a block position: one LINK transfer has no 40 logs).

export interface TokenTransferRecord {
  amount: string
  from: string
  logIndex: number
  to: string
  tokenAddress: string
  decimals: string
  name: string
  symbol: string
  isERC20: boolean
  isERC721: boolean
  isERC777: boolean
  isERC884: boolean
  isERC998: boolean
  isERC1155: boolean
  tokenId: string | null
}

interface TokenFacts {
  metadata: TokenMetadata
  interfaces: InterfaceSupport
}

/** Builds one record from a decoded log and what the token contract says about itself. */
export function transferRecord(transfer: DecodedTransfer, facts: TokenFacts): TokenTransferRecord {
  return {
    amount: decimal(transfer.amount),
    from: transfer.from,
    logIndex: transfer.logIndex,
    to: transfer.to,
    tokenAddress: transfer.tokenAddress,
    decimals: facts.metadata.decimals,
    name: facts.metadata.name,
    symbol: facts.metadata.symbol,
    isERC20: transfer.shape === 'erc20',
    isERC721: transfer.shape === 'erc721' || facts.interfaces.erc721,
    isERC777: facts.interfaces.erc777,
    // ERC884 (share registry) and ERC998 (composables) have no reliable on-chain test.
    isERC884: false,
    isERC998: false,
    isERC1155: transfer.shape === 'erc1155' || facts.interfaces.erc1155,
    tokenId: transfer.tokenId === undefined ? null : decimal(transfer.tokenId),
  }
}

async function tokenFacts(provider: AbstractProvider, token: string): Promise<TokenFacts> {
  const [metadata, interfaces] = await Promise.all([
    readTokenMetadata(provider, token),
    detectInterfaces(provider, token),
  ])
  return { metadata, interfaces }
}

/** The token transfers of a mined transaction; 404 for an unknown, pending or transfer-less one. */
export async function readTokenTransfers(
  provider: AbstractProvider,
  blockchain: string,
  hash: string,
): Promise<Record<string, unknown>> {
  const receipt = await provider.getTransactionReceipt(hash)
  if (receipt === null) {
    const pending = await provider.getTransaction(hash)
    if (pending === null)
      throw new FeedServiceError(404, `transaction ${hash} not found on blockchain '${blockchain}'`)
    throw new FeedServiceError(
      404,
      `transaction ${hash} on blockchain '${blockchain}' is still pending: its token transfers are known once it is mined`,
    )
  }
  const transfers = decodeTransfers(receipt.logs)
  if (transfers.length === 0) {
    const why = receipt.status === 0 ? ' (it failed, so it moved nothing)' : ''
    throw new FeedServiceError(
      404,
      `transaction ${hash} on blockchain '${blockchain}' made no token transfer${why}: no ERC20/ERC721 Transfer or ERC1155 TransferSingle/TransferBatch log`,
    )
  }
  // One set of calls per token contract, however many of its transfers the transaction made.
  const tokens = [...new Set(transfers.map((transfer) => transfer.tokenAddress))]
  const facts = new Map(
    await Promise.all(
      tokens.map(async (token) => [token, await tokenFacts(provider, token)] as const),
    ),
  )
  const records = transfers.map((transfer) =>
    transferRecord(transfer, facts.get(transfer.tokenAddress) as TokenFacts),
  )
  const [first] = records as [TokenTransferRecord, ...TokenTransferRecord[]]
  return { ...first, transfers: records }
}
