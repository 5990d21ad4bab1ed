import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseSettings, type Settings } from '../../src/config/settings.ts'
import { fetchFeed } from '../../src/feeds/client.ts'
import { createFeedServer, type FeedServer } from '../../src/feeds/server/index.ts'
import { deployDemoTokens, type DemoTokens } from '../../src/feeds/server/blockchain/index.ts'
import { UpstreamError } from '../../src/feeds/upstream-error.ts'
import { startTestChain, type TestChain } from './blockchain/chain.ts'

// The blockchain family end to end: the local feed service over HTTP (its envelope, its routing
// to this module) and the upstream client (which validates `data` against the catalog), on anvil
// with the demo tokens the dev stack deploys, and on the recorded ethereum-mainnet data.

const KEY = 'blockchain-http-test-key'
let chain: TestChain
let server: FeedServer
let settings: Settings
let demo: DemoTokens

beforeAll(async () => {
  chain = await startTestChain()
  demo = await deployDemoTokens(chain.signer)
  server = createFeedServer({ keys: [KEY], chains: { local: chain.anvil.rpcUrl } })
  const url = await server.listen(0)
  settings = parseSettings({ BLOCKCHAIN_URL: url, FEED_API_KEY: KEY, FETCH_TIMEOUT_MS: '5000' })
})

afterAll(async () => {
  await server?.close()
  await chain?.stop()
})

describe('blockchain feeds over HTTP', () => {
  it('answers token-transfers of the demo ERC721 transfer with the envelope and catalog-valid data', async () => {
    const result = await fetchFeed(
      'token-transfers',
      { blockchain: 'local', hash: demo.erc721.transferTx, key: '##signKey' },
      { settings },
    )
    expect(result.envelope).toMatchObject({
      status: 200,
      result: 'success',
      query: { blockchain: 'local', hash: demo.erc721.transferTx },
      provider: { name: expect.any(String) },
    })
    expect(result.data).toMatchObject({
      amount: demo.erc721.tokenId.toString(),
      isERC721: true,
      tokenAddress: demo.erc721.address.toLowerCase(),
    })
  })

  it('answers transaction and account-balance of the dev chain', async () => {
    const tx = await fetchFeed(
      'transaction',
      { blockchain: 'local', hash: demo.erc1155.transferBatchTx, key: '##signKey' },
      { settings },
    )
    expect(tx.data).toMatchObject({
      hash: demo.erc1155.transferBatchTx,
      statusResult: { name: 'successful' },
      to: [{ address: demo.erc1155.address.toLowerCase() }],
    })
    const balance = await fetchFeed(
      'account-balance',
      { blockchain: 'local', address: chain.address, key: '##signKey' },
      { settings },
    )
    expect(balance.data.balance).toBe((await chain.provider.getBalance(chain.address)).toString())
  })

  it('answers recorded ethereum-mainnet transactions, and a 404 with the reason for the rest', async () => {
    const recorded = await fetchFeed(
      'transaction',
      {
        blockchain: 'ethereum-mainnet',
        hash: '0x7a3dbdc6f5b8b748d972ee9e35ecea6ff62a624816c944bf2419c430156c54ba',
        key: '##signKey',
      },
      { settings },
    )
    expect(recorded.data).toMatchObject({
      blockNumber: '6333148',
      value: '79743700000000000',
      v: '28',
    })

    const missing = await fetchFeed(
      'token-transfers',
      { blockchain: 'ethereum-mainnet', hash: `0x${'ab'.repeat(32)}`, key: '##signKey' },
      { settings },
    ).catch((error: unknown) => error)
    expect(missing).toBeInstanceOf(UpstreamError)
    expect((missing as UpstreamError).message).toMatch(/recorded mainnet data only/)
  })
})
