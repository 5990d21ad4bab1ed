import { RLP, type Input } from '@ethereumjs/rlp'
import { SigningKey, computeAddress, getBytes, keccak256 } from 'ethers'
import { signRecoverable } from 'tiny-secp256k1'

/** A signed transaction: the bytes to broadcast and their hash. */
export interface SignedTx {
  raw: string
  hash: string
}

type Quantity = bigint | number | string

/**
 * What the sender signs: an EIP-1559 transaction (type 2) or an EIP-155 legacy one (type 0, for a
 * chain without a base fee). No access list, and always a recipient.
 */
export type TxToSign = {
  chainId: Quantity
  nonce: number
  to: string
  data: string
  value?: Quantity
  gasLimit: Quantity
} & (
  | { type: 2; maxFeePerGas: Quantity; maxPriorityFeePerGas: Quantity }
  | { type: 0; gasPrice: Quantity }
)

/** Signs transactions for one key. The key stays inside; nothing here logs or returns it. */
export interface TxSigner {
  readonly address: string
  sign(tx: TxToSign): SignedTx
}

/**
 * A signer that makes the same bytes as ethers' `Wallet.signTransaction` (RFC 6979 signatures are
 * deterministic, and both libraries give the low-S one; `test/chain/tx-signer.test.ts` compares them
 * on random transactions). The transaction is RLP-encoded from byte arrays by @ethereumjs/rlp, and
 * libsecp256k1 compiled to WebAssembly (tiny-secp256k1) signs its hash. ethers' own serialiser goes
 * through hex strings and arrays of numbers, one per byte, several times per transaction: a sampled
 * heap profile of the runner put a quarter of everything it allocated under signing, and its time
 * was ~0.4 ms a fulfilment (`npm run bench:signing` for the figures now).
 */
export function createTxSigner(privateKey: string): TxSigner {
  const signingKey = new SigningKey(privateKey)
  const key = getBytes(signingKey.privateKey)
  return {
    address: computeAddress(signingKey.publicKey),
    sign(tx) {
      const to = bytesOfHex(tx.to)
      const data = bytesOfHex(tx.data)
      const value = BigInt(tx.value ?? 0n)
      const chainId = BigInt(tx.chainId)
      if (tx.type === 2) {
        const fields: Input[] = [
          chainId,
          tx.nonce,
          BigInt(tx.maxPriorityFeePerGas),
          BigInt(tx.maxFeePerGas),
          BigInt(tx.gasLimit),
          to,
          value,
          data,
          [],
        ]
        const { yParity, r, s } = signHash(typed(2, RLP.encode(fields)), key)
        return finished(typed(2, RLP.encode([...fields, yParity, r, s])))
      }
      // EIP-155: the hash covers the chain id, and v carries it.
      const fields: Input[] = [tx.nonce, BigInt(tx.gasPrice), BigInt(tx.gasLimit), to, value, data]
      const { yParity, r, s } = signHash(RLP.encode([...fields, chainId, 0, 0]), key)
      return finished(RLP.encode([...fields, chainId * 2n + 35n + BigInt(yParity), r, s]))
    },
  }
}

function signHash(payload: Uint8Array, key: Uint8Array): { yParity: number; r: bigint; s: bigint } {
  const { signature, recoveryId } = signRecoverable(getBytes(keccak256(payload)), key)
  // 2 and 3 mean r overflowed the curve order (odds ~2^-127): no transaction can carry that.
  if (recoveryId !== 0 && recoveryId !== 1)
    throw new Error(`signature recovery id ${recoveryId} cannot be sent`)
  // As integers, so that RLP drops their leading zero bytes as ethers does.
  return {
    yParity: recoveryId,
    r: bigIntOf(signature.subarray(0, 32)),
    s: bigIntOf(signature.subarray(32, 64)),
  }
}

/** An EIP-2718 typed transaction: its type byte, then its RLP payload. */
function typed(type: number, payload: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(payload.length + 1)
  bytes[0] = type
  bytes.set(payload, 1)
  return bytes
}

function finished(bytes: Uint8Array): SignedTx {
  return {
    raw: `0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}`,
    hash: keccak256(bytes),
  }
}

function bytesOfHex(hex: string): Uint8Array {
  if (!/^0x(?:[0-9a-fA-F]{2})*$/.test(hex)) throw new Error(`not 0x-hex bytes: ${hex.slice(0, 20)}`)
  return new Uint8Array(Buffer.from(hex.slice(2), 'hex'))
}

function bigIntOf(bytes: Uint8Array): bigint {
  return BigInt(
    `0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}`,
  )
}
