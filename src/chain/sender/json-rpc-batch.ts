import { Agent, request } from 'undici'
import { FeedrunnerError } from '../../config/errors.ts'
import { readBounded } from '../../net/bounded-body.ts'
import { nodeAnswered, parseNodeJson } from '../node-json-rpc-provider.ts'
import { z } from 'zod'
import { classifyRefusal, type NodeRefusal } from './node-refusal.ts'

/** Keep-alive connections to the node, used by undici's request (lighter than fetch for a call per batch). */
const nodeConnections = new Agent()

/** One call of a batch: the method and its parameters. */
export type RpcCall = readonly [method: string, params: readonly unknown[]]

/** A call's answer: its result, or the node's error message for it. */
export type RpcOutcome = { ok: true; result: unknown } | { ok: false; message: string }

const batchAnswer = z.array(
  z.object({
    id: z.number(),
    result: z.unknown().optional(),
    error: z.object({ message: z.string() }).passthrough().optional(),
  }),
)

/**
 * Posts `calls` as one JSON-RPC batch over plain HTTP and returns one outcome per call, in the order
 * of `calls` (a node may answer a batch in any order). Throws when the exchange itself fails: HTTP
 * error, timeout, or an answer that is not a batch; a call the node left unanswered is an error outcome.
 */
export async function postJsonRpcBatch(
  rpcUrl: string,
  calls: readonly RpcCall[],
  timeoutMs = 30_000,
  maxBytes = DEFAULT_RPC_MAX_RESPONSE_BYTES,
): Promise<RpcOutcome[]> {
  const response = await request(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(
      calls.map(([method, params], id) => ({ jsonrpc: '2.0', id, method, params })),
    ),
    signal: AbortSignal.timeout(timeoutMs),
    dispatcher: nodeConnections,
  })
  if (response.statusCode < 200 || response.statusCode >= 300) {
    await response.body.dump()
    throw new FeedrunnerError(
      `${calls[0]?.[0] ?? 'JSON-RPC'}: the node answered HTTP ${response.statusCode}`,
      { kind: response.statusCode >= 500 ? 'unavailable' : 'upstream' },
    )
  }
  const answers = new Map(
    (await readBatchAnswer(response.body, calls, maxBytes)).map((answer) => [answer.id, answer]),
  )
  return calls.map((_, id): RpcOutcome => {
    const answer = answers.get(id)
    if (!answer) return { ok: false, message: 'the node did not answer this call' }
    if (answer.error) return { ok: false, message: answer.error.message }
    return { ok: true, result: answer.result }
  })
}

/** The settings' default of RPC_MAX_RESPONSE_BYTES, for callers given none. */
export const DEFAULT_RPC_MAX_RESPONSE_BYTES = 64 * 1024 * 1024

/**
 * The node's answer, read under the byte cap while it streams, nesting bounded, checked as a batch:
 * anything else fails the whole exchange with a reason (kind `upstream`), never a bare parser error.
 */
async function readBatchAnswer(
  body: AsyncIterable<Uint8Array>,
  calls: readonly RpcCall[],
  maxBytes: number,
): Promise<z.infer<typeof batchAnswer>> {
  const what = calls[0]?.[0] ?? 'JSON-RPC'
  const fail = (reason: string): never => nodeAnswered(what, reason)
  const read = await readBounded(body, maxBytes)
  if (!read.ok)
    return fail(`more than ${maxBytes} bytes (RPC_MAX_RESPONSE_BYTES); the connection was closed`)
  const json = parseNodeJson(read.bytes.toString('utf8'), what)
  const parsed = batchAnswer.safeParse(json)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    return fail(
      `something that is not a JSON-RPC batch (${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'})`,
    )
  }
  return parsed.data
}

/** A node's JSON-RPC error for one call, with the method it answered. */
export class JsonRpcCallError extends FeedrunnerError {
  override readonly name = 'JsonRpcCallError'
  /** What the node's words mean for a transaction it was sent (src/chain/sender/node-refusal.ts). */
  readonly refusal: NodeRefusal
  constructor(
    readonly method: string,
    readonly nodeMessage: string,
  ) {
    const refusal = classifyRefusal(nodeMessage)
    super(`${method}: ${nodeMessage}`, { kind: 'node_refused', retryable: refusal === 'transient' })
    this.refusal = refusal
  }
}

export interface JsonRpcClient {
  /** The call's raw result (hex strings, objects as the node sent them); rejects with the node's error. */
  call<T>(method: string, params: readonly unknown[]): Promise<T>
}

/**
 * A JSON-RPC client whose calls made in one tick leave together as one batch (one HTTP request), so a
 * look at the chain that asks for a head, nonces and several receipts at once costs one exchange.
 * Lighter than ethers' JsonRpcProvider for raw calls: no provider machinery per call, and no 10 ms wait
 * to gather a batch.
 */
export function createJsonRpcClient(
  rpcUrl: string,
  timeoutMs = 30_000,
  maxBytes = DEFAULT_RPC_MAX_RESPONSE_BYTES,
): JsonRpcClient {
  let gathering: Array<{
    call: RpcCall
    resolve: (result: unknown) => void
    reject: (error: Error) => void
  }> = []
  const flush = (): void => {
    const batch = gathering
    gathering = []
    postJsonRpcBatch(
      rpcUrl,
      batch.map((item) => item.call),
      timeoutMs,
      maxBytes,
    ).then(
      (outcomes) =>
        batch.forEach((item, index) => {
          const outcome = outcomes[index] as RpcOutcome
          if (outcome.ok) item.resolve(outcome.result)
          else item.reject(new JsonRpcCallError(item.call[0], outcome.message))
        }),
      (error: unknown) =>
        batch.forEach((item) =>
          item.reject(error instanceof Error ? error : new Error(String(error))),
        ),
    )
  }
  return {
    call<T>(method: string, params: readonly unknown[]) {
      return new Promise<T>((resolve, reject) => {
        if (gathering.length === 0) setImmediate(flush)
        gathering.push({
          call: [method, params],
          resolve: resolve as (result: unknown) => void,
          reject,
        })
      })
    },
  }
}
