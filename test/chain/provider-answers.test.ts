import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectProvider, type ChainProvider } from '../../src/chain/provider.ts'

/**
 * The provider the listener and recovery read with decodes answers with Node's UTF-8 decoder, not
 * ethers' own (src/chain/node-json-rpc-provider.ts). What a node answers is a stranger's bytes: text
 * in any script reads back as sent, and bytes that are not UTF-8, JSON nested without end, or no JSON
 * at all fail that one read with the reason, while the provider goes on serving.
 */
let server: Server
let url = ''
/** What the node answers to web3_clientVersion: a raw body. */
let clientVersionBody: Buffer = Buffer.alloc(0)
let provider: ChainProvider

beforeAll(async () => {
  server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown
      const calls = (Array.isArray(body) ? body : [body]) as { id: number; method: string }[]
      response.writeHead(200, { 'content-type': 'application/json' })
      if (calls[0]?.method === 'web3_clientVersion') return void response.end(clientVersionBody)
      const answers = calls.map((call) => ({ jsonrpc: '2.0', id: call.id, result: '0x2a' }))
      response.end(JSON.stringify(Array.isArray(body) ? answers : answers[0]))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  provider = await connectProvider(url, { chainId: 31337 })
})

afterAll(() => {
  provider.destroy()
  server.closeAllConnections()
  return new Promise<void>((resolve) => server.close(() => resolve()))
})

function answerWith(text: string | Buffer): void {
  clientVersionBody = typeof text === 'string' ? Buffer.from(text, 'utf8') : text
}

describe('what a node answers, as the provider reads it', () => {
  it('text in any script reads back as the node sent it', async () => {
    const version = 'anvil/v1.0 ü € 日本 😀'
    answerWith(JSON.stringify({ jsonrpc: '2.0', id: 1, result: version }))
    expect(await provider.send('web3_clientVersion', [])).toBe(version)
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
      answerWith(body)
      await expect(provider.send('web3_clientVersion', [])).rejects.toThrow(reason)
      await expect(provider.send('web3_clientVersion', [])).rejects.toThrow(/web3_clientVersion/)
      expect(await provider.getBlockNumber()).toBe(42)
    },
  )
})
