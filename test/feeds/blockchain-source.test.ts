import { createServer, type Server } from 'node:http'
import { Wallet, keccak256, parseEther } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../../src/dev/ports.ts'
import { startAnvil } from '../../src/dev/anvil.ts'
import {
  createBlockchainSource,
  recordedHashes,
  type BlockchainSource,
} from '../../src/feeds/server/blockchain/index.ts'
import { expectCatalogShape } from './blockchain/catalog.ts'
import { feedError, startTestChain, type TestChain } from './blockchain/chain.ts'

// account-balance, chain routing (unknown ids, ws), recorded ethereum-mainnet data, and the
// answers when the node cannot be reached or answers nonsense.

let chain: TestChain
let source: BlockchainSource

beforeAll(async () => {
  chain = await startTestChain()
  source = createBlockchainSource({
    chains: { local: chain.anvil.rpcUrl, 'local-ws': chain.anvil.wsUrl },
  })
})

afterAll(async () => {
  await source?.close()
  await chain?.stop()
})

describe('account balance', () => {
  it('equals eth_getBalance at the latest block, with that block number and time', async () => {
    const funded = Wallet.createRandom().address
    await (await chain.signer.sendTransaction({ to: funded, value: parseEther('1.234') })).wait()
    const data = await source.accountBalance({ blockchain: 'local', address: funded })
    expectCatalogShape('account-balance', data)

    const head = await chain.provider.getBlock('latest')
    const balance = await chain.provider.send('eth_getBalance', [funded, 'latest'])
    expect(data).toEqual({
      address: funded.toLowerCase(),
      blockNumber: String(head?.number),
      timestamp: new Date((head?.timestamp ?? 0) * 1000).toISOString(),
      balance: BigInt(balance as string).toString(),
    })
    expect(data.balance).toBe(parseEther('1.234').toString())
  })

  it('answers over a WebSocket node URL as over HTTP', async () => {
    const address = chain.address
    const [overHttp, overWs] = await Promise.all([
      source.accountBalance({ blockchain: 'local', address }),
      source.accountBalance({ blockchain: 'local-ws', address }),
    ])
    expect(overWs.balance).toBe(overHttp.balance)
    expect(overWs.blockNumber).toBe(overHttp.blockNumber)
  })

  it('answers 400 for a malformed address (defence behind the catalog)', async () => {
    const error = await feedError(source.accountBalance({ blockchain: 'local', address: '0x1234' }))
    expect(error.status).toBe(400)
    expect(error.description).toMatch(/^address/)
  })
})

describe('blockchain ids', () => {
  it('answers 404 naming the served chains for an unknown blockchain id', async () => {
    const error = await feedError(
      source.transaction({ blockchain: 'solana-mainnet', hash: keccak256('0x01') }),
    )
    expect(error.status).toBe(404)
    expect(error.description).toContain("unknown blockchain 'solana-mainnet'")
    expect(error.description).toContain('local')
    expect(error.description).toContain('ethereum-mainnet (recorded data)')
  })

  it('matches ids case-insensitively', async () => {
    const data = await source.accountBalance({ blockchain: 'LOCAL', address: chain.address })
    expect(data.address).toBe(chain.address.toLowerCase())
  })
})

describe('recorded ethereum-mainnet data', () => {
  it('serves the service sample transaction as recorded', async () => {
    const data = await source.transaction({
      blockchain: 'ethereum-mainnet',
      hash: '0x133f293b44b2eb632a26e8f7c972ad0f6152ca5c78377102e6804c46ebde6c83',
    })
    expectCatalogShape('transaction', data)
    expect(data).toMatchObject({
      blockNumber: '9061064',
      blockHash: '0x90f957bdff1b3c90283fc58e0fbadf2a356ed5ca0c8afb07c08498cd23dfc26a',
      fee: '452840000000000',
      gasPrice: '20000000000',
      gasUsed: '22642',
      index: 55,
      v: '38',
      type: null,
      to: [
        { address: '0xb8c77482e45f1f44de1745f52c74426c631bdd52', nameNormalized: 'Binance Coin' },
      ],
      statusResult: { code: '0x1', confirmed: true, success: true, name: 'successful' },
    })
  })

  it('serves the recorded Amberdata records: a creation, a failed and a pending transaction', async () => {
    const creation = await source.transaction({
      blockchain: 'ethereum-mainnet',
      hash: '0xfa777f6f3c5a985dbc620bb1c152955461d7e63270bd34d4b1cf6b9ed2b2f2a8',
    })
    expectCatalogShape('transaction', creation)
    expect(creation).toMatchObject({
      to: [{ address: 'null' }],
      contractAddress: '0xc7b23a1af5f2e999907f7db135a0602f2aaf90a9',
    })

    const failed = await source.transaction({
      blockchain: 'ethereum-mainnet',
      hash: '0x1b8aa428fd5df34c482e44c64d932d52308eeded99f1da672711c5956a0072d0',
    })
    expectCatalogShape('transaction', failed)
    expect(failed).toMatchObject({
      status: '0x0',
      statusResult: { name: 'failed', success: false },
      fee: '1794075000000000',
    })

    const pending = await source.transaction({
      blockchain: 'ethereum-mainnet',
      hash: '0xd74aac4828354dd37daf2091c14006c99da16ceb00b78e4c5b5483a6c42008e0',
    })
    expect(pending).toMatchObject({
      blockNumber: null,
      statusResult: { name: 'pending', confirmed: false },
    })
  })

  it('serves every recorded hash, and recorded token transfers in the FEEDS.md shape', async () => {
    const { transactions, tokenTransfers } = recordedHashes()
    expect(transactions.length).toBeGreaterThanOrEqual(5)
    for (const hash of transactions)
      expect((await source.transaction({ blockchain: 'ethereum-mainnet', hash })).hash).toBe(hash)
    expect(tokenTransfers.length).toBeGreaterThanOrEqual(4)
    for (const hash of tokenTransfers)
      expectCatalogShape(
        'token-transfers',
        await source.tokenTransfers({ blockchain: 'ethereum-mainnet', hash }),
      )

    const link = await source.tokenTransfers({
      blockchain: 'ethereum-mainnet',
      hash: '0x39c87b282b46ff70e78ed985a54d93dfee45cf6c8a3c6f900f6fe60023398aae',
    })
    expect(link).toMatchObject({
      amount: '249990000000000000000',
      from: '0xfbb1b73c4f0bda4f67dca266ce6ef42f520fbb98',
      to: '0x43889e5c175f5196c660b35261b524f54d6a7650',
      logIndex: 5,
      symbol: 'LINK',
      decimals: '18',
      isERC20: true,
      isERC1155: false,
    })
  })

  it('gives each caller its own copy of a recorded record', async () => {
    const hash = '0x133f293b44b2eb632a26e8f7c972ad0f6152ca5c78377102e6804c46ebde6c83'
    const first = await source.transaction({ blockchain: 'ethereum-mainnet', hash })
    ;(first.statusResult as Record<string, unknown>).name = 'tampered'
    const second = await source.transaction({ blockchain: 'ethereum-mainnet', hash })
    expect((second.statusResult as Record<string, unknown>).name).toBe('successful')
  })

  it('answers 404 for mainnet data that was not recorded, saying only recorded data is available', async () => {
    const tx = await feedError(
      source.transaction({ blockchain: 'ethereum-mainnet', hash: keccak256('0x02') }),
    )
    expect(tx.status).toBe(404)
    expect(tx.description).toMatch(/recorded mainnet data only/)
    const balance = await feedError(
      source.accountBalance({ blockchain: 'ethereum-mainnet', address: chain.address }),
    )
    expect(balance.status).toBe(404)
    expect(balance.description).toMatch(/recorded mainnet data only/)
  })

  it('answers ethereum-mainnet live when a node URL is configured for it', async () => {
    const live = createBlockchainSource({ chains: { 'ethereum-mainnet': chain.anvil.rpcUrl } })
    try {
      const sent = await chain.signer.sendTransaction({
        to: Wallet.createRandom().address,
        value: 1n,
      })
      await sent.wait()
      expect(
        (await live.transaction({ blockchain: 'ethereum-mainnet', hash: sent.hash })).hash,
      ).toBe(sent.hash)
      const recorded = await feedError(
        live.transaction({
          blockchain: 'ethereum-mainnet',
          hash: '0x133f293b44b2eb632a26e8f7c972ad0f6152ca5c78377102e6804c46ebde6c83',
        }),
      )
      expect(recorded.status).toBe(404)
    } finally {
      await live.close()
    }
  })
})

describe('unreachable or broken nodes', () => {
  let broken: Server
  let brokenUrl: string

  beforeAll(async () => {
    // Answers every request with HTTP 500 and a non-JSON body: reachable, but not a JSON-RPC node.
    broken = createServer((_, response) => response.writeHead(500).end('internal trouble'))
    await new Promise<void>((resolve) => broken.listen(0, '127.0.0.1', resolve))
    const address = broken.address()
    brokenUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  })

  afterAll(async () => {
    await new Promise<void>((resolve) => broken?.close(() => resolve()))
  })

  it('answers 503 for a node that refuses connections, without echoing the URL path (it may hold a key)', async () => {
    const port = await freePort()
    const down = createBlockchainSource({
      chains: {
        down: `http://127.0.0.1:${port}/v3/SECRET-PROJECT-KEY`,
        'down-ws': `ws://127.0.0.1:${port}/ws/SECRET-PROJECT-KEY`,
      },
    })
    try {
      for (const blockchain of ['down', 'down-ws']) {
        const started = Date.now()
        const error = await feedError(down.accountBalance({ blockchain, address: chain.address }))
        expect(error.status).toBe(503)
        expect(error.description).toContain(`blockchain '${blockchain}'`)
        expect(error.description).toMatch(/cannot be reached/)
        expect(error.description).toContain(`127.0.0.1:${port}`)
        expect(error.description).not.toContain('SECRET')
        expect(Date.now() - started).toBeLessThan(30_000) // a refused connection is not retried until a hang
      }
    } finally {
      await down.close()
    }
  })

  it('answers 503 within the time limit for a node that never answers', async () => {
    const silent = createServer(() => undefined) // accepts, never responds
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const address = silent.address()
    const port = typeof address === 'object' && address ? address.port : 0
    const slow = createBlockchainSource({
      chains: { slow: `http://127.0.0.1:${port}` },
      rpcTimeoutMs: 400,
    })
    try {
      const started = Date.now()
      const error = await feedError(
        slow.transaction({ blockchain: 'slow', hash: keccak256('0x03') }),
      )
      expect(error.status).toBe(503)
      expect(error.description).toMatch(/400 ms/)
      expect(Date.now() - started).toBeLessThan(30_000) // the silent node never answers: a hang catcher
    } finally {
      await slow.close()
      silent.closeAllConnections()
      await new Promise<void>((resolve) => silent.close(() => resolve()))
    }
  })

  it('answers 502 for a server that answers, but not as a JSON-RPC node', async () => {
    const odd = createBlockchainSource({ chains: { odd: brokenUrl } })
    try {
      const error = await feedError(odd.transaction({ blockchain: 'odd', hash: keccak256('0x04') }))
      expect(error.status).toBe(502)
      expect(error.description).toContain("blockchain 'odd'")
    } finally {
      await odd.close()
    }
  })

  it('recovers when the node comes back: 503 while it is down, answers again after', async () => {
    const port = await freePort()
    const flaky = createBlockchainSource({
      chains: { flaky: `http://127.0.0.1:${port}`, 'flaky-ws': `ws://127.0.0.1:${port}` },
    })
    const first = await startAnvil({ port })
    try {
      expect(
        (await flaky.accountBalance({ blockchain: 'flaky', address: chain.address })).balance,
      ).toMatch(/^\d+$/)
      expect(
        (await flaky.accountBalance({ blockchain: 'flaky-ws', address: chain.address })).balance,
      ).toMatch(/^\d+$/)
      await first.stop()
      expect(
        (await feedError(flaky.accountBalance({ blockchain: 'flaky', address: chain.address })))
          .status,
      ).toBe(503)
      expect(
        (await feedError(flaky.accountBalance({ blockchain: 'flaky-ws', address: chain.address })))
          .status,
      ).toBe(503)
      const second = await startAnvil({ port })
      try {
        expect(
          (await flaky.accountBalance({ blockchain: 'flaky', address: chain.address })).blockNumber,
        ).toBe('0')
        expect(
          (await flaky.accountBalance({ blockchain: 'flaky-ws', address: chain.address }))
            .blockNumber,
        ).toBe('0')
      } finally {
        await second.stop()
      }
    } finally {
      await first.stop()
      await flaky.close()
    }
  })

  it('answers 503 after close()', async () => {
    const closing = createBlockchainSource({ chains: { local: chain.anvil.rpcUrl } })
    await closing.close()
    expect(
      (await feedError(closing.accountBalance({ blockchain: 'local', address: chain.address })))
        .status,
    ).toBe(503)
  })

  it('refuses a chain URL that is not http(s) or ws(s) at creation', () => {
    expect(() => createBlockchainSource({ chains: { bad: 'ftp://example.org' } })).toThrow(
      /bad.*http/,
    )
  })
})
