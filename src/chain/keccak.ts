import { createRequire } from 'node:module'
import { keccak256 } from 'ethers/crypto'
import type { createKeccak as CreateKeccak } from 'hash-wasm'

// The package's index compiles every hash it has: ~12 MB more RSS in each process than this file,
// which holds Keccak alone (~2 MB).
const { createKeccak } = createRequire(import.meta.url)('hash-wasm/dist/keccak.umd.min.js') as {
  createKeccak: typeof CreateKeccak
}

let installed: Promise<void> | undefined

/**
 * Makes ethers hash with hash-wasm's Keccak-256 (WebAssembly) instead of its JavaScript one, for the
 * whole process: ~1 µs a hash against ~14 µs here. ethers hashes far more than it shows: every
 * address it decodes, encodes or signs for is checksummed with a Keccak of its own, and each
 * fulfilment is hashed to be signed and again to be tracked, about fifteen hashes per request in the
 * runner. The hasher is created once (WebAssembly compiles asynchronously), then used synchronously,
 * as ethers requires; a process is single-threaded, so one hasher serves every call.
 */
export function useWasmKeccak(): Promise<void> {
  installed ??= createKeccak(256).then((hasher) => {
    keccak256.register((data: Uint8Array) => {
      hasher.init()
      hasher.update(data)
      return hasher.digest('binary')
    })
  })
  return installed
}
