import { startJsonRpcProxy, type Transport } from '../../src/dev/json-rpc-proxy.ts'

/** One JSON-RPC call a client made through the tap. */
export interface TappedCall {
  method: string
  params: unknown[]
  transport: Transport
}

export interface JsonRpcTap {
  readonly httpUrl: string
  readonly wsUrl: string
  /** Every call made through the tap, in order (each call of a batch apart). */
  readonly calls: readonly TappedCall[]
  /** The numbers of the block headers the tap handed to its clients (answers and newHeads notifications). */
  readonly headersGiven: ReadonlySet<number>
  /** While true, every `logsBloom` in an answer or a notification reaches the client as zeros. */
  zeroBlooms: boolean
  /**
   * While true, an HTTP `eth_getBlockByNumber('latest')` is answered with the head answered last
   * before (a node that stopped following its chain): the client sees no new head until it is false.
   */
  holdHead: boolean
  /**
   * While set, every other HTTP request with an `eth_getLogs` is answered as a node `blocks` behind
   * the head the tap handed out last would (one RPC_URL, two nodes behind a load balancer): a block
   * read by a hash it does not know is refused ("unknown block", as every node does); a range past
   * its head is refused as the execution API says (`refuse`) or answered with the logs it has
   * (`truncate`, as older clients and anvil do). With `every`, every such request goes to it (a
   * balancer that keeps sending the log reads to a stuck backend).
   */
  laggingLogs: { blocks: number; answer: 'refuse' | 'truncate'; every?: boolean } | undefined
  /** The number of a block whose header the tap handed out, by its hash. */
  blockOf(hash: string): number | undefined
  /** How many log reads the lagging node refused or answered short. */
  readonly laggedReads: number
  stop(): Promise<void>
}

const ZERO_BLOOM_FIELD = `"logsBloom":"0x${'0'.repeat(512)}"`

/**
 * A JSON-RPC proxy in front of one node (anvil) for tests: HTTP and WebSocket on one port, as a node
 * serves them. It records each call and each block header it hands over, and can play a node whose
 * headers carry zeroed blooms (some chains' nodes fill none). src/dev/rpc-call-counter.ts counts for
 * the bench; this one looks inside the answers.
 */
export async function startJsonRpcTap(target: {
  rpcUrl: string
  wsUrl: string
}): Promise<JsonRpcTap> {
  const calls: TappedCall[] = []
  const headersGiven = new Set<number>()
  const numbersByHash = new Map<string, number>()
  const tap: Pick<JsonRpcTap, 'zeroBlooms' | 'holdHead' | 'laggingLogs'> = {
    zeroBlooms: false,
    holdHead: false,
    laggingLogs: undefined,
  }
  const lagging = { requests: 0, lagged: 0 }
  let lastHead: unknown
  const record = (body: string, transport: Transport) => {
    for (const call of messagesOf(body))
      calls.push({
        method: String(call.method ?? 'unknown'),
        params: Array.isArray(call.params) ? call.params : [],
        transport,
      })
  }
  /** The answer or notification as the client gets it: headers recorded, blooms zeroed when asked. */
  const passOn = (body: string): string => {
    for (const message of messagesOf(body)) {
      const payload =
        'result' in message ? message.result : (message.params as { result?: unknown })?.result
      const number = headerNumberOf(payload)
      if (number !== undefined) {
        headersGiven.add(number)
        numbersByHash.set(String((payload as { hash?: unknown }).hash).toLowerCase(), number)
      }
    }
    return tap.zeroBlooms
      ? body.replace(/"logsBloom"\s*:\s*"0x[0-9a-fA-F]*"/g, ZERO_BLOOM_FIELD)
      : body
  }
  /** The answer to `request` with each head read's result the held head while `holdHead` is set. */
  const headHeld = (request: string, answer: string): string => {
    const headReads = new Set(
      messagesOf(request)
        .filter((call) => call.method === 'eth_getBlockByNumber')
        .filter((call) => (call.params as unknown[] | undefined)?.[0] === 'latest')
        .map((call) => call.id),
    )
    if (headReads.size === 0) return answer
    const parsed = parsedOrUndefined(answer)
    for (const message of messagesIn(parsed).filter((reply) => headReads.has(reply.id))) {
      if (tap.holdHead && lastHead !== undefined) message.result = lastHead
      else lastHead = message.result
    }
    return tap.holdHead ? JSON.stringify(parsed) : answer
  }
  /** The answer to `request`, every other one with log reads answered as the lagging node would. */
  const lagged = (request: string, answer: string): string => {
    const lag = tap.laggingLogs
    if (!lag) return answer
    const reads = messagesOf(request).filter((call) => call.method === 'eth_getLogs')
    // A balancer sends a whole request (a batch too) to one node.
    if (reads.length === 0 || (lagging.requests++ % 2 === 0 && !lag.every)) return answer
    const lagHead = Math.max(...headersGiven) - lag.blocks
    const parsed = parsedOrUndefined(answer)
    const replies = messagesIn(parsed)
    for (const call of reads) {
      const reply = replies.find((message) => message.id === call.id)
      const filter = ((call.params as unknown[] | undefined)?.[0] ?? {}) as Record<string, string>
      if (!reply) continue
      const refuse = (code: number, message: string) => {
        delete reply.result
        reply.error = { code, message }
        lagging.lagged++
      }
      if (filter.blockHash !== undefined) {
        const number = numbersByHash.get(filter.blockHash.toLowerCase())
        if (number === undefined || number > lagHead) refuse(-32000, 'unknown block')
      } else if (Number(filter.toBlock) > lagHead) {
        if (lag.answer === 'refuse') refuse(-32602, 'block range extends beyond current head block')
        else {
          const logs = (reply.result ?? []) as Array<{ blockNumber: string }>
          reply.result = logs.filter((log) => Number(log.blockNumber) <= lagHead)
          lagging.lagged++
        }
      }
    }
    return JSON.stringify(parsed)
  }
  const proxy = await startJsonRpcProxy(target, {
    onRequest: record,
    answer: (request, answer) => passOn(headHeld(request, lagged(request, answer))),
    pushed: passOn,
  })
  return {
    httpUrl: proxy.httpUrl,
    wsUrl: proxy.wsUrl,
    calls,
    headersGiven,
    get zeroBlooms() {
      return tap.zeroBlooms
    },
    set zeroBlooms(zero: boolean) {
      tap.zeroBlooms = zero
    },
    get holdHead() {
      return tap.holdHead
    },
    set holdHead(hold: boolean) {
      tap.holdHead = hold
    },
    get laggingLogs() {
      return tap.laggingLogs
    },
    set laggingLogs(lag) {
      tap.laggingLogs = lag
    },
    blockOf: (hash: string) => numbersByHash.get(hash.toLowerCase()),
    get laggedReads() {
      return lagging.lagged
    },
    stop: () => proxy.stop(),
  }
}

/** The JSON-RPC messages of a body: one, or each of a batch; none when it is not JSON. */
function messagesOf(body: string): Array<Record<string, unknown>> {
  return messagesIn(parsedOrUndefined(body))
}

/** The messages of a parsed body (the objects themselves: an edit shows in the body). */
function messagesIn(parsed: unknown): Array<Record<string, unknown>> {
  return (Array.isArray(parsed) ? parsed : [parsed]).filter(
    (message): message is Record<string, unknown> =>
      typeof message === 'object' && message !== null,
  )
}

function parsedOrUndefined(body: string): unknown {
  try {
    return JSON.parse(body) as unknown
  } catch {
    return undefined
  }
}

/** The number of a block header (a block answered, or a newHeads notification's), else undefined. */
function headerNumberOf(value: unknown): number | undefined {
  const header = value as { number?: unknown; parentHash?: unknown } | null | undefined
  return typeof header?.number === 'string' && typeof header.parentHash === 'string'
    ? Number(header.number)
    : undefined
}
