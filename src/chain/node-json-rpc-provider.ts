import { JsonRpcProvider, type JsonRpcPayload, type JsonRpcResult } from 'ethers'
import { FeedrunnerError } from '../config/errors.ts'
import { nestingBeyond } from '../net/bounded-body.ts'

/** Deepest JSON nesting read from a node: an answer of logs, blocks or calls nests a handful deep. */
export const RPC_MAX_DEPTH = 64

const utf8 = new TextDecoder('utf-8', { fatal: true })
const utf8Encoder = new TextEncoder()

/**
 * ethers' JSON-RPC provider over HTTP, reading answers with Node's own UTF-8 decoder and refusing JSON
 * nested deeper than RPC_MAX_DEPTH. ethers decodes every answer byte by byte in JavaScript
 * (FetchResponse.bodyText): in a burst that was a sixth of the runner's CPU (a `--cpu-prof` of
 * `npm run bench`), for the logs and blocks the listener reads.
 */
export class NodeJsonRpcProvider extends JsonRpcProvider {
  override async _send(payload: JsonRpcPayload | JsonRpcPayload[]): Promise<JsonRpcResult[]> {
    const request = this._getConnection()
    request.body = utf8Encoder.encode(JSON.stringify(payload))
    request.setHeader('content-type', 'application/json')
    const response = await request.send()
    response.assertOk()
    const answer = parseAnswer(response.body, methodsOf(payload))
    return Array.isArray(answer) ? answer : [answer]
  }
}

function methodsOf(payload: JsonRpcPayload | JsonRpcPayload[]): string {
  const calls = Array.isArray(payload) ? payload : [payload]
  const first = calls[0]?.method ?? 'JSON-RPC'
  return calls.length > 1 ? `${first} (and ${calls.length - 1} more in the batch)` : first
}

/** The answer's JSON; an error of kind `upstream` when it is not UTF-8 JSON or nests too deep. */
function parseAnswer(body: Uint8Array | null, what: string): JsonRpcResult | JsonRpcResult[] {
  let text: string
  try {
    text = body === null ? '' : utf8.decode(body)
  } catch {
    return nodeAnswered(what, 'bytes that are not UTF-8 text')
  }
  // ethers' own type for an answer; ethers reads an error member of one as well.
  return parseNodeJson(text, what) as JsonRpcResult | JsonRpcResult[]
}

/**
 * A node's answer as JSON, its nesting bounded (RPC_MAX_DEPTH) before it is parsed; anything else
 * fails with the reason, kind `upstream`, never a bare parser error. `what` names the call.
 */
export function parseNodeJson(text: string, what: string): unknown {
  if (nestingBeyond(text, RPC_MAX_DEPTH) !== undefined)
    return nodeAnswered(what, `JSON nested deeper than ${RPC_MAX_DEPTH} levels`)
  try {
    return JSON.parse(text)
  } catch (error) {
    return nodeAnswered(
      what,
      `something that is not JSON (${(error as Error).message.slice(0, 120)})`,
    )
  }
}

/** Fails a call with what the node answered instead of an answer. */
export function nodeAnswered(what: string, reason: string): never {
  throw new FeedrunnerError(`${what}: the node answered ${reason}`, { kind: 'upstream' })
}
