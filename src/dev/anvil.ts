import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { FeedrunnerError } from '../config/errors.ts'
import { freePort } from './ports.ts'
import { startOwnedProcess, waitFor, type OwnedProcess } from './process.ts'

const require = createRequire(import.meta.url)

/** anvil's default mnemonic accounts: [0] deploys, [1..] are node keys. Never use them outside a dev chain. */
export const ANVIL_PRIVATE_KEYS = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
  '0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6',
  '0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a',
  '0x8b3a350cf5c34c9194ca85829a2df0ec3153be0318b5e2d3348e872092edffba',
] as const

export const DEV_CHAIN_HARDFORK = 'cancun'

export interface AnvilOptions {
  port?: number
  chainId?: number
  /** Seconds between blocks; omitted = automine (a block per transaction). */
  blockTime?: number
  baseFeePerGas?: bigint
  /**
   * States anvil keeps for queries at past blocks (`--prune-history`), default 64. Without a bound
   * anvil keeps 500 in memory and writes every older one to disk, one per block: measured on this
   * machine (bench/runner/, paced phase), a request's share of anvil's CPU was 11.8 ms without and
   * 8.7 ms with 64 states, and anvil's peak memory over a whole bench 566 MB against 257 MB.
   * feedrunner reads past state only a block or two back (a revert replayed on the block before its
   * receipt); blocks, logs and receipts are kept whatever this says.
   */
  keptStates?: number
  /**
   * The EVM rules (`--hardfork`), default `cancun`. From Prague on, every block writes its parent's hash
   * into the EIP-2935 history contract, and anvil 1.7 rebuilds the whole state trie for each block, so
   * its cost per block grows with the chain: measured here with `evm_mine`, 0.4 ms per empty block at
   * the start and 3.9 ms after 3,000 blocks under `prague`, 0.17-0.23 ms throughout under `cancun`
   * (foundry-rs/foundry#15715 made the trie incremental after 1.7.1, the newest anvil on npm).
   * Nothing feedrunner deploys or calls needs Prague's opcodes. An `extraArgs` `--hardfork` wins.
   */
  hardfork?: string
  extraArgs?: readonly string[]
  /**
   * Count the JSON-RPC calls anvil serves, by method (`calls()`). anvil then logs every call and each
   * transaction it mines, which costs it CPU: for the bench's BENCH_RPC_CALLS view, not for a chain
   * whose CPU is measured.
   */
  countCalls?: boolean
}

export interface Anvil {
  readonly rpcUrl: string
  readonly wsUrl: string
  readonly chainId: number
  readonly process: OwnedProcess
  /** With `countCalls`: the calls served since anvil started, by method; otherwise undefined. */
  calls(): Record<string, number> | undefined
  stop(): Promise<void>
}

/**
 * Path of the anvil binary shipped inside `@foundry-rs/anvil` (spawned directly so its PID is anvil's).
 * anvil is a dev dependency: an install without them (`npm prune --omit=dev`, the production image)
 * has none, and the dev stack says so with the remedy.
 */
export function anvilBinary(): string {
  const platformPackage = `@foundry-rs/anvil-${process.platform}-${process.arch === 'x64' ? 'amd64' : process.arch}`
  try {
    return join(dirname(require.resolve(`${platformPackage}/package.json`)), 'bin', 'anvil')
  } catch (error) {
    // Not installed is the whole story (resolve's require stack says nothing more); anything else
    // is some other fault, passed on as it is.
    if ((error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw error
    throw new FeedrunnerError(
      `the dev chain needs anvil (${platformPackage}, a dev dependency), which this install does not have: install with the dev dependencies (npm install), or in Docker build the image's dev target (docker build --target dev)`,
      { kind: 'config' },
    )
  }
}

/** Starts anvil on a free loopback port and waits until it answers JSON-RPC. */
export async function startAnvil(options: AnvilOptions = {}): Promise<Anvil> {
  const port = options.port ?? (await freePort())
  const chainId = options.chainId ?? 31337
  const args = [
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--chain-id',
    String(chainId),
    ...(options.countCalls ? [] : ['--silent']),
    '--prune-history',
    String(options.keptStates ?? 64),
  ]
  if (options.blockTime !== undefined) args.push('--block-time', String(options.blockTime))
  if (options.baseFeePerGas !== undefined)
    args.push('--block-base-fee-per-gas', options.baseFeePerGas.toString())
  const extraArgs = options.extraArgs ?? []
  if (!extraArgs.some((arg) => arg === '--hardfork' || arg.startsWith('--hardfork=')))
    args.push('--hardfork', options.hardfork ?? DEV_CHAIN_HARDFORK)
  args.push(...extraArgs)
  const process = startOwnedProcess('anvil', anvilBinary(), args, { ownProcessGroup: true })
  const calls = options.countCalls ? countCallLines(process) : undefined
  const rpcUrl = `http://127.0.0.1:${port}`
  try {
    // Another anvil may answer on the port (two stacks that both found it free): only ours counts,
    // and ours exiting (the port taken) ends the wait at once.
    const exited = process.exited.then(({ code }) => {
      throw new Error(`it exited (${code}): ${process.output().trim()}`)
    })
    exited.catch(() => undefined)
    const listening = waitFor(`anvil on ${rpcUrl}`, async () => {
      const response = await fetch(rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      })
      return response.ok && listensOn(process.pid, port)
    })
    listening.catch(() => undefined)
    await Promise.race([listening, exited])
  } catch (error) {
    await process.stop()
    throw new Error(`anvil did not start: ${(error as Error).message}\n${process.output()}`)
  }
  return {
    rpcUrl,
    wsUrl: `ws://127.0.0.1:${port}`,
    chainId,
    process,
    calls: () => (calls ? Object.fromEntries(calls) : undefined),
    stop: () => process.stop(),
  }
}

/**
 * Whether process `pid` holds the listening socket of TCP port `port` (Linux's /proc): a chain that
 * answers on the port may be another process's, which started there first.
 */
function listensOn(pid: number, port: number): boolean {
  const inodes = new Set<string>()
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    const target = readlinkSafe(`/proc/${pid}/fd/${fd}`)
    const match = /^socket:\[(\d+)\]$/.exec(target ?? '')
    if (match) inodes.add(match[1] as string)
  }
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0')
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    const lines = existsSync(table) ? readFileSync(table, 'utf8').split('\n').slice(1) : []
    for (const line of lines) {
      const fields = line.trim().split(/\s+/)
      // local_address is ADDR:PORT in hex, st 0A is LISTEN, the inode is the tenth field.
      if (fields[1]?.endsWith(`:${hexPort}`) && fields[3] === '0A' && inodes.has(fields[9] ?? ''))
        return true
    }
  }
  return false
}

function readlinkSafe(path: string): string | undefined {
  try {
    return readlinkSync(path)
  } catch {
    return undefined
  }
}

/** A line of anvil's log that names the method of a call it served (its other lines describe blocks). */
const CALL_LINE = /^(eth|net|web3|anvil|evm|txpool|debug|trace|ots)_\w+$/

/** Counts the method names anvil logs, one a line, as its output arrives. */
function countCallLines(process: OwnedProcess): Map<string, number> {
  const calls = new Map<string, number>()
  let partial = ''
  process.child.stdout?.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString('utf8')).split('\n')
    // A method name is a short line: a long unfinished one is no call, and is not kept.
    partial = (lines.pop() ?? '').slice(-256)
    for (const line of lines) {
      const method = line.trim()
      if (CALL_LINE.test(method)) calls.set(method, (calls.get(method) ?? 0) + 1)
    }
  })
  return calls
}
