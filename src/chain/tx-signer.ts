import { Signature, SigningKey, Transaction, computeAddress, getBytes, hexlify, keccak256, type TransactionLike } from 'ethers'
import { signRecoverable } from 'tiny-secp256k1'

/** A signed transaction: the bytes to broadcast and their hash. */
export interface SignedTx {
  raw: string
  hash: string
}

/** Signs transactions for one key. The key stays inside; nothing here logs or returns it. */
export interface TxSigner {
  readonly address: string
  sign(tx: TransactionLike<string>): SignedTx
}

/**
 * A signer that makes the same bytes as ethers' `Wallet.signTransaction` (RFC 6979 signatures are
 * deterministic, and both libraries give the low-S one) at half its cost with the WebAssembly
 * Keccak (`npm run bench:signing`): ethers builds and serialises the transaction, and libsecp256k1
 * compiled to WebAssembly (tiny-secp256k1) signs its hash in ~0.1 ms where ethers' JavaScript curve
 * takes ~0.3 ms, more under load. Signing was the runner's largest single cost per request (README,
 * Performance).
 */
export function createTxSigner(privateKey: string): TxSigner {
  const signingKey = new SigningKey(privateKey)
  const key = getBytes(signingKey.privateKey)
  return {
    address: computeAddress(signingKey.publicKey),
    sign(request) {
      const tx = Transaction.from(request)
      const { signature, recoveryId } = signRecoverable(getBytes(tx.unsignedHash), key)
      // 2 and 3 mean r overflowed the curve order (odds ~2^-127): no transaction can carry that.
      if (recoveryId !== 0 && recoveryId !== 1) throw new Error(`signature recovery id ${recoveryId} cannot be sent`)
      tx.signature = Signature.from({ r: hexlify(signature.subarray(0, 32)), s: hexlify(signature.subarray(32, 64)), yParity: recoveryId })
      // ethers' tx.hash serialises the transaction again: hash the bytes already made.
      const raw = tx.serialized
      return { raw, hash: keccak256(raw) }
    },
  }
}
