import type { Command } from 'commander'

const readers = new WeakSet<Command>()

/**
 * Marks a command that reads and prints (status, runs show, ...): it starts without ethers's Keccak
 * replaced by the WebAssembly one, which pays off over thousands of hashes in a service process and
 * costs a read command the load of ethers it may not need at all.
 */
export function reader(command: Command): Command {
  readers.add(command)
  return command
}

/** Whether `command` was marked by `reader`. */
export function readsOnly(command: Command): boolean {
  return readers.has(command)
}
