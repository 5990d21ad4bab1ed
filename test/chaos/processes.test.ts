import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, describe, expect, it } from 'vitest'
import { Part } from '../../chaos/part.ts'
import { startRpcProxy, type RpcProxy } from '../../chaos/rpc-proxy.ts'
import { freePort } from '../../src/dev/ports.ts'
import { waitFor } from '../../src/dev/process.ts'

// The fault search's own moving parts: the RPC proxy that keeps what runners broadcast, and a part
// run under faketime, whose signals must reach the node process and not only faketime's wrapper.

/**
 * A JSON-RPC node stand-in that answers every call with its method's name, but eth_blockNumber with
 * block 42, and keeps the methods in the order they came.
 */
async function startEchoNode(): Promise<{ url: string; server: Server; methods: string[] }> {
  const methods: string[] = []
  const server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString()) as unknown
      const answer = (call: { id: number; method: string }) => {
        methods.push(call.method)
        const result = call.method === 'eth_blockNumber' ? '0x2a' : call.method
        return { jsonrpc: '2.0', id: call.id, result }
      }
      response.setHeader('content-type', 'application/json')
      response.end(
        JSON.stringify(
          Array.isArray(body) ? body.map(answer) : answer(body as { id: number; method: string }),
        ),
      )
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, methods }
}

const post = (url: string, body: unknown) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  }).then((response) => response.json())

describe('the RPC proxy', () => {
  let node: Awaited<ReturnType<typeof startEchoNode>> | undefined
  let proxy: RpcProxy | undefined

  afterAll(async () => {
    await proxy?.close()
    await new Promise((resolve) => node?.server.close(resolve))
  })

  it('forwards calls, keeps every raw transaction sent alone or in a batch with the head before it, and cuts the link', async () => {
    node = await startEchoNode()
    proxy = await startRpcProxy(node.url)
    expect(
      await post(proxy.url, {
        jsonrpc: '2.0',
        id: 1,
        method: 'eth_sendRawTransaction',
        params: ['0x01'],
      }),
    ).toMatchObject({ result: 'eth_sendRawTransaction' })
    const batch = await post(proxy.url, [
      { jsonrpc: '2.0', id: 1, method: 'eth_blockNumber', params: [] },
      { jsonrpc: '2.0', id: 2, method: 'eth_sendRawTransaction', params: ['0x02'] },
    ])
    expect(batch).toHaveLength(2)
    expect(proxy.broadcasts.map((broadcast) => broadcast.raw)).toEqual(['0x01', '0x02'])
    // The node's head, read before the transaction went on to it.
    expect(proxy.broadcasts.map((broadcast) => broadcast.head)).toEqual([42, 42])
    expect(node.methods.slice(0, 2)).toEqual(['eth_blockNumber', 'eth_sendRawTransaction'])

    proxy.cut()
    await expect(
      post(proxy.url, {
        jsonrpc: '2.0',
        id: 3,
        method: 'eth_sendRawTransaction',
        params: ['0x03'],
      }),
    ).rejects.toThrow()
    proxy.restore()
    proxy.slow(50)
    expect(
      await post(proxy.url, { jsonrpc: '2.0', id: 4, method: 'eth_chainId', params: [] }),
    ).toMatchObject({
      result: 'eth_chainId',
    })
    proxy.restore()
  })
})

/** A feed service as a part of the fault search, started, with its clock `offsetSeconds` off. */
async function startedFeeds(offsetSeconds: number): Promise<{ part: Part; port: number }> {
  const port = await freePort()
  const part = new Part({
    name: 'feeds',
    kind: 'feeds',
    args: ['feeds', 'serve', '--port', String(port), '--keys', 'k'],
    env: { LOG_LEVEL: 'warn' },
    clockOffsetSeconds: offsetSeconds,
  })
  await part.start()
  return { part, port }
}

describe('a part with its clock offset', () => {
  it('runs under faketime, and SIGTERM reaches the node process, which exits 0', async () => {
    const { part, port } = await startedFeeds(120)
    try {
      expect(part.running).toBe(true)
      // An answer, not only the ready line: `feeds serve` installs its SIGTERM handler just after
      // printing that line, and a signal in between ends it by the default action.
      expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBeGreaterThanOrEqual(200)
      const outcome = await part.stop('SIGTERM')
      // faketime does not pass signals on: had the wrapper been signalled, node would still run.
      expect(outcome).toMatchObject({ part: 'feeds', signal: 'SIGTERM', code: 0, overran: false })
      expect(part.running).toBe(false)
    } finally {
      await part.stop('SIGKILL')
    }
  }, 120_000)
})

describe('a part that ends by itself', () => {
  it('is told as died when the harness comes to stop it, and not after the harness stopped it', async () => {
    const { part } = await startedFeeds(0)
    try {
      // Ended from outside the harness, as a crash ends it.
      process.kill(part.pid!, 'SIGKILL')
      await waitFor('the part gone', async () => !part.running, 10_000, 20)
      expect(await part.stop('SIGTERM')).toMatchObject({ part: 'feeds', died: true })
      // Stopped once: a second stop finds nothing to tell.
      expect(await part.stop('SIGTERM')).toBeUndefined()
    } finally {
      await part.stop('SIGKILL')
    }
  }, 120_000)
})
