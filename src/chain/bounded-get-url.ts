import type { FetchCancelSignal, FetchGetUrlFunc, FetchRequest, GetUrlResponse } from 'ethers'
import { Agent, request } from 'undici'
import { FeedrunnerError } from '../config/errors.ts'
import { readBounded } from '../net/bounded-body.ts'

/** Keep-alive connections to the node for ethers' reads (logs, blocks, calls). */
const nodeConnections = new Agent()

/**
 * ethers' HTTP layer for a provider whose answers are read under a byte cap while they stream:
 * ethers' own reader buffers a whole answer before anything looks at its size, so a node (or whatever
 * sits in front of it) answering a log query with gigabytes would take the process's memory first.
 * At the cap the connection is closed and the call fails with a reason naming the setting.
 */
export function boundedGetUrl(maxBytes: number): FetchGetUrlFunc {
  return async (req: FetchRequest, signal?: FetchCancelSignal): Promise<GetUrlResponse> => {
    const abort = new AbortController()
    signal?.addListener(() => abort.abort())
    const timeout = setTimeout(() => abort.abort(), req.timeout)
    try {
      const response = await request(req.url, {
        method: req.method as 'GET' | 'POST',
        headers: req.headers,
        body: req.body ? Buffer.from(req.body) : undefined,
        signal: abort.signal,
        dispatcher: nodeConnections,
      })
      const read = await readBounded(response.body, maxBytes)
      if (!read.ok)
        throw new FeedrunnerError(
          `the RPC node answered more than ${maxBytes} bytes (RPC_MAX_RESPONSE_BYTES); the connection was closed: narrow the query, or raise RPC_MAX_RESPONSE_BYTES if the node is trusted`,
          { kind: 'upstream' },
        )
      return {
        statusCode: response.statusCode,
        statusMessage: '',
        headers: headersOf(response.headers),
        body: read.bytes.byteLength > 0 ? new Uint8Array(read.bytes) : null,
      }
    } finally {
      clearTimeout(timeout)
    }
  }
}

function headersOf(raw: Record<string, string | string[] | undefined>): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(raw))
    if (value !== undefined)
      headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value
  return headers
}
