/**
 * Signing benchmark (`npm run bench:signing`): what the runner's sender pays to sign one fulfilment,
 * with ethers' own `Wallet.signTransaction` (the baseline) and with `createTxSigner`, each first with
 * ethers' JavaScript Keccak and then with the WebAssembly one every feedrunner process installs
 * (`useWasmKeccak`). Rounds alternate the two signers so that a change in this machine's speed hits
 * both alike. Bounded: BENCH_SIGNATURES per signer and round (default 2,000), BENCH_ROUNDS rounds (3).
 */
import { Wallet, getAddress } from 'ethers'
import { useWasmKeccak } from '../src/chain/keccak.ts'
import { createTxSigner, type TxToSign } from '../src/chain/sender/tx-signer.ts'

const SIGNATURES = Number(process.env.BENCH_SIGNATURES ?? 2_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
// anvil's second dev account, the dev stack's node key: a well-known test key, nothing to protect.
const KEY = '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d'

/** A fulfilOracleRequest2 of one uint256, as the game-odds job sends it: 4 + 6 * 32 + 96 bytes of calldata. */
function fulfilment(nonce: number): TxToSign {
  return {
    type: 2,
    chainId: 31337n,
    nonce,
    to: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
    data: `0x6ae0bc76${'5623'.repeat(16)}${'00'.repeat(32)}${'00'.repeat(12)}9fe46736679d2d9a65f0992f2272de9f3c7fa6e0${'7c1f72a0'.padEnd(64, '0')}${'6b042a05'.padStart(64, '0')}${'c0'.padStart(64, '0')}${'40'.padStart(64, '0')}${'5623'.repeat(16)}${'a0'.padStart(64, '0')}`,
    value: 0n,
    gasLimit: 500_000n,
    maxFeePerGas: 2_000_000_000n,
    maxPriorityFeePerGas: 1_000_000_000n,
  }
}

async function microsecondsPer(count: number, work: (index: number) => unknown): Promise<number> {
  const started = performance.now()
  for (let index = 0; index < count; index += 1) await work(index)
  return ((performance.now() - started) * 1_000) / count
}

async function measure(
  label: string,
): Promise<{ wallet: number; signer: number; checksum: number }> {
  const wallet = new Wallet(KEY)
  const signer = createTxSigner(KEY)
  const wallets: number[] = []
  const signers: number[] = []
  for (let round = 0; round < ROUNDS; round += 1) {
    wallets.push(
      await microsecondsPer(SIGNATURES, (index) => wallet.signTransaction(fulfilment(index))),
    )
    signers.push(await microsecondsPer(SIGNATURES, (index) => signer.sign(fulfilment(index))))
  }
  const checksum = await microsecondsPer(SIGNATURES * 5, () =>
    getAddress('0x9fe46736679d2d9a65f0992f2272de9f3c7fa6e0'),
  )
  const result = { wallet: median(wallets), signer: median(signers), checksum }
  console.log(
    `${label.padEnd(26)} ethers Wallet ${result.wallet.toFixed(0).padStart(5)} µs   createTxSigner ${result.signer.toFixed(0).padStart(5)} µs   ` +
      `one address checksum ${result.checksum.toFixed(1).padStart(5)} µs`,
  )
  return result
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.floor(sorted.length / 2)] as number
}

console.log(
  `signing a fulfilment, median of ${ROUNDS} rounds of ${SIGNATURES} (a fresh nonce each)`,
)
const javascript = await measure('ethers JavaScript Keccak')
await useWasmKeccak()
const wasm = await measure('WebAssembly Keccak')
console.log(
  `\nthe runner's signing against the baseline (ethers Wallet, JavaScript Keccak): ${(wasm.signer / javascript.wallet).toFixed(2)}x the time ` +
    `(${javascript.wallet.toFixed(0)} -> ${wasm.signer.toFixed(0)} µs a fulfilment); an address checksum ${(wasm.checksum / javascript.checksum).toFixed(2)}x`,
)
