import { createServer, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createChainReader } from '../../src/chain/listener/chain-reader.ts'
import { connectProvider } from '../../src/chain/provider.ts'
import { FeedrunnerError } from '../../src/config/errors.ts'

/**
 * The listener's and recovery's reads go through ethers' provider, with Node's UTF-8 decoder for its
 * answers (src/chain/node-json-rpc-provider.ts); they are read under RPC_MAX_RESPONSE_BYTES while they stream (issue 23: a node, or whatever sits in front of it, that
 * answers a log query endlessly costs the cap, not the process). A node on loopback answers
 * eth_getLogs with an endless chunked body and everything else normally.
 */
const CAP = 256 * 1024
const CHUNK = Buffer.alloc(64 * 1024, 0x20)
let server: Server
let url = ''
let endlessBytesWritten = 0
let endlessClosed = false
/** What the node answers to web3_clientVersion: a raw body. */
let clientVersionBody: Buffer = Buffer.alloc(0)

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown
      const calls = (Array.isArray(body) ? body : [body]) as { id: number; method: string }[]
      if (calls[0]?.method === 'web3_clientVersion') {
        response.writeHead(200, { 'content-type': 'application/json' })
        response.end(clientVersionBody)
      } else if (calls.some((call) => call.method === 'eth_getLogs')) answerEndlessly(response)
      else answer(response, Array.isArray(body), calls)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => {
  server.closeAllConnections()
  return new Promise<void>((resolve) => server.close(() => resolve()))
})

function answer(response: ServerResponse, batch: boolean, calls: { id: number }[]): void {
  const answers = calls.map((call) => ({ jsonrpc: '2.0', id: call.id, result: '0x2a' }))
  response.writeHead(200, { 'content-type': 'application/json' })
  response.end(JSON.stringify(batch ? answers : answers[0]))
}

/** `[` and then blanks for ever (chunked, no content-length), until the reader hangs up. */
function answerEndlessly(response: ServerResponse): void {
  response.writeHead(200, { 'content-type': 'application/json' })
  response.write('[')
  response.on('close', () => (endlessClosed = true))
  const pump = () => {
    while (!response.destroyed && endlessBytesWritten < 2_000_000_000) {
      endlessBytesWritten += CHUNK.byteLength
      if (!response.write(CHUNK)) return void response.once('drain', pump)
    }
  }
  pump()
}

it('an endless eth_getLogs answer fails the read at RPC_MAX_RESPONSE_BYTES, and the provider goes on serving', async () => {
  const provider = await connectProvider(url, { chainId: 31337, maxResponseBytes: CAP })
  try {
    const heapBefore = process.memoryUsage().rss
    const read = provider.getLogs({ fromBlock: 0, toBlock: 1 })
    await expect(read).rejects.toThrow(/more than 262144 bytes \(RPC_MAX_RESPONSE_BYTES\)/)
    // The connection was closed at the cap: the node stops writing, and nothing near its stream's
    // size was kept (the bound is generous: only a reader that buffers the stream exceeds it).
    await expect.poll(() => endlessClosed, { timeout: 30_000 }).toBe(true)
    expect(process.memoryUsage().rss - heapBefore).toBeLessThan(50 * 1024 * 1024)
    // Another read on the same provider is answered as usual.
    expect(await provider.getBlockNumber()).toBe(42)
  } finally {
    provider.destroy()
  }
})

/**
 * What a node answers is a stranger's bytes: text in any script reads back as sent, and bytes that
 * are not UTF-8, JSON nested without end, or no JSON at all fail that one read with the reason, while
 * the provider goes on serving.
 */
describe('what a node answers, as the provider reads it', () => {
  const answerWith = (text: string | Buffer) =>
    (clientVersionBody = typeof text === 'string' ? Buffer.from(text, 'utf8') : text)

  it('text in any script reads back as the node sent it', async () => {
    const provider = await connectProvider(url, { chainId: 31337 })
    try {
      const version = 'anvil/v1.0 ü € 日本 😀'
      answerWith(JSON.stringify({ jsonrpc: '2.0', id: 1, result: version }))
      expect(await provider.send('web3_clientVersion', [])).toBe(version)
    } finally {
      provider.destroy()
    }
  })

  it.each([
    ['bytes that are not UTF-8', Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), /not UTF-8 text/],
    [
      'JSON nested 10,000 deep',
      `${'['.repeat(10_000)}${']'.repeat(10_000)}`,
      /nested deeper than 64/,
    ],
    ['something that is not JSON', '<html>502 Bad Gateway</html>', /not JSON/],
  ])(
    '%s fail that read with the reason, and the next read is answered',
    async (_, body, reason) => {
      const provider = await connectProvider(url, { chainId: 31337 })
      try {
        answerWith(body)
        await expect(provider.send('web3_clientVersion', [])).rejects.toThrow(reason)
        await expect(provider.send('web3_clientVersion', [])).rejects.toThrow(/web3_clientVersion/)
        expect(await provider.getBlockNumber()).toBe(42)
      } finally {
        provider.destroy()
      }
    },
  )
})

it('a head that is not a block fails the listener read with its kind and the call, not a NaN head', async () => {
  // This node answers eth_getBlockByNumber with a number (0x2a), as a broken proxy might.
  const reader = createChainReader({
    rpcUrl: url,
    chainId: 31337,
    operators: ['0x0000000000000000000000000000000000000001'],
    pollIntervalMs: 1_000,
    maxBlockRange: 1_000,
  })
  try {
    const read = reader.currentHead()
    await expect(read).rejects.toBeInstanceOf(FeedrunnerError)
    await expect(read).rejects.toMatchObject({ kind: 'upstream' })
    await expect(read).rejects.toThrow(/eth_getBlockByNumber\(latest\)/)
  } finally {
    reader.connected?.destroy()
  }
})
