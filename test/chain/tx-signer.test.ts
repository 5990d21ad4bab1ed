import fc from 'fast-check'
import { Transaction, Wallet, hexlify, keccak256 } from 'ethers'
import { describe, expect, it } from 'vitest'
import { createTxSigner } from '../../src/chain/sender/tx-signer.ts'

const address = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((bytes) => hexlify(bytes))
const fee = fc.bigInt({ min: 1n, max: 10n ** 13n })
const common = {
  chainId: fc.constantFrom(1n, 31337n, 11155111n),
  nonce: fc.nat({ max: 2 ** 32 }),
  to: address,
  data: fc.uint8Array({ maxLength: 600 }).map((bytes) => hexlify(bytes)),
  value: fc.bigInt({ min: 0n, max: 10n ** 18n }),
  gasLimit: fc.bigInt({ min: 21_000n, max: 30_000_000n }),
}
const eip1559 = fc
  .tuple(fc.record({ ...common, type: fc.constant(2) }), fee, fee)
  .map(([tx, priority, extra]) => ({
    ...tx,
    maxPriorityFeePerGas: priority,
    maxFeePerGas: priority + extra,
  }))
const legacy = fc.record({ ...common, type: fc.constant(0), gasPrice: fee })
const privateKey = fc
  .uint8Array({ minLength: 32, maxLength: 32 })
  .filter((bytes) => bytes.some((byte) => byte !== 0) && bytes[0]! < 0xff)
  .map((bytes) => hexlify(bytes))

describe('createTxSigner', () => {
  it('makes the very bytes ethers Wallet.signTransaction makes, for EIP-1559 and legacy transactions', async () => {
    await fc.assert(
      fc.asyncProperty(privateKey, fc.oneof(eip1559, legacy), async (key, tx) => {
        const signer = createTxSigner(key)
        const wallet = new Wallet(key)
        const signed = signer.sign(tx)
        expect(signed.raw).toBe(await wallet.signTransaction(tx))
        expect(signed.hash).toBe(keccak256(signed.raw))
        expect(signer.address).toBe(wallet.address)
        expect(Transaction.from(signed.raw).from).toBe(wallet.address)
      }),
      { numRuns: 200 },
    )
  })

  // RLP drops an integer's leading zero bytes: one in 256 signatures has an r or s that starts with one.
  it('matches ethers when r or s starts with a zero byte, for both transaction types', async () => {
    const key = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'
    const signer = createTxSigner(key)
    const wallet = new Wallet(key)
    for (const type of [2, 0] as const) {
      let found = 0
      for (let nonce = 0; found < 2 && nonce < 5_000; nonce++) {
        const common = {
          chainId: 31337n,
          nonce,
          to: `0x${'1'.repeat(40)}`,
          data: '0x1234',
          gasLimit: 50_000n,
        }
        const tx =
          type === 2
            ? { ...common, type, maxFeePerGas: 2n, maxPriorityFeePerGas: 1n }
            : { ...common, type, gasPrice: 2n }
        const signed = signer.sign(tx)
        const { r, s } = Transaction.from(signed.raw).signature!
        if (!r.startsWith('0x00') && !s.startsWith('0x00')) continue
        found += 1
        expect(signed.raw).toBe(await wallet.signTransaction(tx))
      }
      expect(found, `type ${type}`).toBe(2)
    }
  })

  it('never shows the key: not in its address, its output or its own fields', () => {
    const key = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'
    const signer = createTxSigner(key)
    const signed = signer.sign({
      type: 2,
      chainId: 31337n,
      nonce: 0,
      to: `0x${'1'.repeat(40)}`,
      data: '0x',
      gasLimit: 21_000n,
      maxFeePerGas: 2n,
      maxPriorityFeePerGas: 1n,
    })
    expect(JSON.stringify({ signer, signed })).not.toContain(key.slice(2))
  })
})
