/**
 * What the bench measures with, none of it feedrunner's own code: percentiles, a process's CPU time and
 * peak memory from /proc, a runner's heap and counters from its /metrics, the machine's speed, and
 * the time each block was seen (Redis's commands: redis-commands.ts).
 */
import { readFileSync } from 'node:fs'
import { Transaction, Wallet } from 'ethers'
import { WebSocket, type RawData } from 'ws'
import { waitFor } from '../../src/dev/process.ts'
import { RUNNER_KEYS } from './settings.ts'

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  return sorted[
    Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  ] as number
}

export function summary(values: readonly number[]): {
  p50: number
  p95: number
  p99: number
  max: number
} {
  const sorted = [...values].sort((a, b) => a - b)
  return {
    p50: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    max: sorted.at(-1) ?? Number.NaN,
  }
}

export function round(value: number, digits = 1): number {
  const scale = 10 ** digits
  return Math.round(value * scale) / scale
}

/** Per request between two counts (commands, bytes, RPC calls), largest first, those >= 0.05 only. */
export function perRequest(
  before: Record<string, number>,
  after: Record<string, number>,
  requests: number,
  digits = 2,
): Record<string, number> {
  return Object.fromEntries(
    Object.entries(after)
      .map(([name, calls]): [string, number] => [
        name,
        round((calls - (before[name] ?? 0)) / requests, digits),
      ])
      .filter(([, value]) => value >= 0.05)
      .sort((a, b) => b[1] - a[1]),
  )
}

export async function rpc<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  const body = (await response.json()) as { result?: T; error?: { message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.message}`)
  return body.result as T
}

/** Peak resident set (VmHWM) and current RSS of a process, in MB. */
export function memoryOf(pid: number): { peakMb: number; rssMb: number } | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (field: string) =>
      Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN)
    return { peakMb: round(kb('VmHWM') / 1024), rssMb: round(kb('VmRSS') / 1024) }
  } catch {
    return undefined
  }
}

/** CPU time (user + system) a process has used so far, in ms. */
export function cpuMsOf(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    // utime and stime are fields 14 and 15 of stat; after "pid (comm) " they are at 11 and 12.
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS
  } catch {
    return Number.NaN
  }
}
const CLOCK_TICKS = 100

/**
 * Read and write system calls a process has made so far (syscr + syscw of /proc/<pid>/io): on these
 * virtual machines a loopback socket write costs tens of microseconds, so the count of them is a
 * cost of its own, apart from CPU.
 */
export function syscallsOf(pid: number): number {
  try {
    const io = readFileSync(`/proc/${pid}/io`, 'utf8')
    const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)`, 'm').exec(io)?.[1])
    return field('syscr') + field('syscw')
  } catch {
    return Number.NaN
  }
}

/**
 * Stamps every block with the time its newHeads notification arrived (ms since the epoch), from one
 * WebSocket subscription: no polling, so stamping costs the bench next to nothing.
 */
export class BlockWatcher {
  readonly seenAt = new Map<number, number>()
  /** Blocks stamped without their own notification (when a later head arrived first). */
  gapFilled = 0
  private last = -1
  private socket: WebSocket | undefined
  private stopping = false

  constructor(
    private readonly rpcUrl: string,
    private readonly wsUrl: string,
  ) {}

  async start(): Promise<void> {
    this.last = Number(await rpc<string>(this.rpcUrl, 'eth_blockNumber'))
    const socket = new WebSocket(this.wsUrl)
    this.socket = socket
    await new Promise<void>((resolveOpen, reject) => {
      socket.once('open', () => resolveOpen())
      socket.once('error', reject)
    })
    socket.on('error', (error) => console.error(`block watcher: ${error.message}`))
    socket.on('close', () => {
      if (!this.stopping)
        console.error('block watcher: the WebSocket closed; blocks from now on are not stamped')
    })
    const subscribed = new Promise<void>((resolveSubscribed, reject) => {
      socket.on('message', (data: RawData) => {
        const now = Date.now()
        const message = JSON.parse(data.toString()) as {
          id?: number
          method?: string
          params?: { result?: { number?: string } }
          error?: { message: string }
        }
        if (message.id === 1)
          return message.error
            ? reject(new Error(`eth_subscribe: ${message.error.message}`))
            : resolveSubscribed()
        const header = message.params?.result
        if (message.method === 'eth_subscription' && header?.number)
          this.stamp(Number(header.number), now)
      })
    })
    socket.send(
      JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_subscribe', params: ['newHeads'] }),
    )
    await subscribed
  }

  private stamp(head: number, now: number): void {
    if (head <= this.last) return
    this.gapFilled += head - this.last - 1
    for (let block = this.last + 1; block <= head; block++) this.seenAt.set(block, now)
    this.last = head
  }

  /** Waits until the watcher has stamped `block`. */
  async seen(block: number): Promise<number> {
    if (!this.seenAt.has(block))
      await waitFor(`block ${block} to be seen`, async () => this.seenAt.has(block), 30_000, 5)
    return this.seenAt.get(block) as number
  }

  async stop(): Promise<void> {
    this.stopping = true
    const socket = this.socket
    if (!socket || socket.readyState === WebSocket.CLOSED) return
    const closed = new Promise<void>((resolveClose) => socket.once('close', () => resolveClose()))
    socket.close()
    await Promise.race([closed, new Promise((resolveDelay) => setTimeout(resolveDelay, 1_000))])
  }
}

export interface HeapPeak {
  usedMb: number
  totalMb: number
  externalMb: number
}

/** Polls a runner's /metrics (prom-client's nodejs_* gauges) and keeps the largest heap figures. */
export function sampleHeapPeak(metricsUrl: string, everyMs = 1_000): { stop(): Promise<HeapPeak> } {
  const peak: HeapPeak = { usedMb: 0, totalMb: 0, externalMb: 0 }
  const gauge = (text: string, name: string) =>
    Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? Number.NaN) / 2 ** 20
  const sample = async () => {
    const text = await (await fetch(metricsUrl)).text()
    peak.usedMb = Math.max(peak.usedMb, round(gauge(text, 'nodejs_heap_size_used_bytes'), 1))
    peak.totalMb = Math.max(peak.totalMb, round(gauge(text, 'nodejs_heap_size_total_bytes'), 1))
    peak.externalMb = Math.max(
      peak.externalMb,
      round(gauge(text, 'nodejs_external_memory_bytes'), 1),
    )
  }
  const timer = setInterval(() => void sample().catch(() => undefined), everyMs)
  return {
    async stop() {
      clearInterval(timer)
      await sample().catch(() => undefined)
      return peak
    },
  }
}

/** The sum of a counter over its labels (every key's), scraped once; NaN when it cannot be read. */
export async function counterSum(
  metricsUrl: string,
  name: string,
  withLabel = '',
): Promise<number> {
  const text = await (await fetch(metricsUrl)).text().catch(() => '')
  const values = [...text.matchAll(new RegExp(`^${name}(?:\\{([^}]*)\\})? (\\S+)$`, 'gm'))]
    .filter((match) => (match[1] ?? '').includes(withLabel))
    .map((match) => Number(match[2]))
  return values.length === 0 ? Number.NaN : values.reduce((sum, value) => sum + value, 0)
}

/**
 * A fixed piece of CPU work, timed while nothing else runs: µs per signed fulfilment transaction.
 * This VM's speed moves between runs (the same code's runner CPU per request from 9 to 12 ms), so
 * runs are compared against it.
 */
export function signingMicros(samples = 300): number {
  const wallet = new Wallet(RUNNER_KEYS[0] as string)
  const tx = {
    type: 2,
    chainId: 31337,
    to: wallet.address,
    data: `0x${'ab'.repeat(260)}`,
    gasLimit: 500_000n,
    maxFeePerGas: 10n ** 10n,
    maxPriorityFeePerGas: 10n ** 9n,
  }
  const started = performance.now()
  for (let nonce = 0; nonce < samples; nonce++) {
    const unsigned = Transaction.from({ ...tx, nonce })
    unsigned.signature = wallet.signingKey.sign(unsigned.unsignedHash)
  }
  return Math.round(((performance.now() - started) / samples) * 1000)
}
