import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createJsonRpcClient, JsonRpcCallError } from '../../src/chain/sender/json-rpc-batch.ts'

interface RpcRequest {
  id: number
  method: string
  params: unknown[]
}

/** A JSON-RPC node that answers batches in reverse order, echoes params, and fails `bad_method`. */
let server: Server
let url: string
const exchanges: RpcRequest[][] = []
beforeAll(async () => {
  server = createServer((request, response) => {
    let body = ''
    request.on('data', (chunk: Buffer) => (body += chunk.toString()))
    request.on('end', () => {
      const batch = JSON.parse(body) as RpcRequest[]
      exchanges.push(batch)
      const answers = batch.map((call) =>
        call.method === 'bad_method'
          ? { jsonrpc: '2.0', id: call.id, error: { code: -32601, message: 'method not found' } }
          : { jsonrpc: '2.0', id: call.id, result: call.params },
      )
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(JSON.stringify(answers.reverse()))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

describe('createJsonRpcClient', () => {
  it('sends the calls of one tick as one batch and gives each call its own answer', async () => {
    const client = createJsonRpcClient(url)
    const before = exchanges.length
    const answers = await Promise.all([
      client.call('a', [1]),
      client.call('b', [2]),
      client.call('c', [3]),
    ])
    expect(answers).toEqual([[1], [2], [3]])
    expect(exchanges.length - before).toBe(1)
    expect(exchanges.at(-1)?.map((call) => call.method)).toEqual(['a', 'b', 'c'])
  })

  it('rejects only the call the node refused, with the method and the node message', async () => {
    const client = createJsonRpcClient(url)
    const [good, bad] = await Promise.allSettled([
      client.call('ok', ['x']),
      client.call('bad_method', []),
    ])
    expect(good).toEqual({ status: 'fulfilled', value: ['x'] })
    expect(bad.status).toBe('rejected')
    const error = (bad as PromiseRejectedResult).reason as JsonRpcCallError
    expect(error).toBeInstanceOf(JsonRpcCallError)
    expect(error.message).toBe('bad_method: method not found')
  })

  it('rejects every call of the batch when the node cannot be reached', async () => {
    const client = createJsonRpcClient('http://127.0.0.1:1')
    const outcomes = await Promise.allSettled([client.call('a', []), client.call('b', [])])
    expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected'])
  })
})
