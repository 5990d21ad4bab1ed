import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Transaction, Wallet } from 'ethers'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { createOrderedBroadcaster } from '../../src/chain/sender/ordered-broadcast.ts'
import { startPoolBackstop } from '../../src/dev/pool-backstop.ts'
import { waitFor } from '../../src/dev/process.ts'
import { rpc, startTestChain, type TestChain } from './support.ts'

const KEY = ANVIL_PRIVATE_KEYS[2]
const tolerated = (message: string) => /already known|nonce too low/i.test(message)

/** A pass-through JSON-RPC proxy in front of anvil that records each HTTP request's calls. */
async function recordingProxy(target: string): Promise<{
  url: string
  requests: number[][]
  arrivals: number[]
  maxInFlight(): number
  close(): Promise<void>
}> {
  const requests: number[][] = []
  const arrivals: number[] = []
  let inFlight = 0
  let maxInFlight = 0
  const server: Server = createServer((req, res) => {
    maxInFlight = Math.max(maxInFlight, ++inFlight)
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', async () => {
      const parsed = JSON.parse(body) as
        Array<{ method: string; params: string[] }> | { method: string; params: string[] }
      const calls = Array.isArray(parsed) ? parsed : [parsed]
      requests.push(calls.map((call) => Transaction.from(call.params[0] as string).nonce))
      arrivals.push(Date.now())
      const answer = await fetch(target, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      })
      const text = await answer.text()
      inFlight -= 1
      res.writeHead(answer.status, { 'content-type': 'application/json' })
      res.end(text)
    })
  })
  await new Promise<void>((resolveListen) => server.listen(0, '127.0.0.1', resolveListen))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    arrivals,
    maxInFlight: () => maxInFlight,
    close: () => new Promise((resolveClose) => server.close(() => resolveClose())),
  }
}

describe('ordered broadcaster', () => {
  let chain: TestChain
  const wallet = new Wallet(KEY)

  beforeAll(async () => {
    chain = await startTestChain()
  })
  afterAll(async () => {
    await chain?.stop()
  })

  async function signTransfers(count: number): Promise<string[]> {
    const nonce = Number(
      await rpc<string>(chain.dev.provider, 'eth_getTransactionCount', [wallet.address, 'pending']),
    )
    return Promise.all(
      Array.from({ length: count }, (_, index) =>
        wallet.signTransaction({
          type: 2,
          chainId: chain.dev.chainId,
          nonce: nonce + index,
          to: wallet.address,
          value: 0n,
          gasLimit: 21_000,
          maxFeePerGas: 10n ** 11n,
          maxPriorityFeePerGas: 10n ** 9n,
        }),
      ),
    )
  }

  it('sends 100 transactions given at once in nonce order, one request at a time, and all are mined', async () => {
    const proxy = await recordingProxy(chain.anvil.rpcUrl)
    // In order or not, anvil's automine can leave part of a batch in its pool (foundry#10122); the dev
    // chain's backstop mines it, as in feedrunner dev.
    const backstop = startPoolBackstop(chain.anvil.rpcUrl)
    try {
      const broadcaster = createOrderedBroadcaster(proxy.url, tolerated)
      const raws = await signTransfers(100)
      const before = Number(
        await rpc<string>(chain.dev.provider, 'eth_getTransactionCount', [
          wallet.address,
          'latest',
        ]),
      )
      await Promise.all(raws.map((raw) => broadcaster.send(raw)))
      // The first leaves alone; what was given meanwhile leaves as one batch when it is answered.
      expect(proxy.requests.length).toBeGreaterThanOrEqual(2)
      expect(proxy.requests.length).toBeLessThan(100)
      expect(proxy.requests.flat()).toEqual(
        Array.from({ length: 100 }, (_, index) => before + index),
      )
      expect(proxy.maxInFlight()).toBe(1)
      const mined = () =>
        rpc<string>(chain.dev.provider, 'eth_getTransactionCount', [wallet.address, 'latest']).then(
          Number,
        )
      await waitFor('all 100 mined', async () => (await mined()) === before + 100, 5_000, 50)
      // Nothing left behind in the pool: no gap, as out-of-order arrival would leave.
      expect(
        await rpc<{ pending: string; queued: string }>(chain.dev.provider, 'txpool_status'),
      ).toEqual({ pending: '0x0', queued: '0x0' })
    } finally {
      backstop.stop()
      await proxy.close()
    }
  })

  it('holds a batch until minIntervalMs after the one before: what is signed meanwhile leaves with it', async () => {
    const proxy = await recordingProxy(chain.anvil.rpcUrl)
    try {
      // An interval far longer than any stall of a loaded machine: the third send, 100 ms after the
      // second, must still find the second's batch held (a 400 ms hold once left without it).
      const minIntervalMs = 3_000
      const broadcaster = createOrderedBroadcaster(proxy.url, tolerated, { minIntervalMs })
      const [first, second, third] = await signTransfers(3)
      await broadcaster.send(first!)
      const later = [broadcaster.send(second!)]
      await new Promise((resolve) => setTimeout(resolve, 100))
      later.push(broadcaster.send(third!))
      await Promise.all(later)
      expect(proxy.requests.map((nonces) => nonces.length)).toEqual([1, 2])
      // Arrivals at the proxy carry its own delays (a loaded machine delays the first more than the
      // second: 343-348 ms were seen); a batch not held would arrive a few ms after the first's answer.
      expect((proxy.arrivals[1] as number) - (proxy.arrivals[0] as number)).toBeGreaterThanOrEqual(
        minIntervalMs / 2,
      )
    } finally {
      await proxy.close()
    }
  })

  it('resolves a transaction the node already has, and rejects only the one the node refuses, with its message', async () => {
    const broadcaster = createOrderedBroadcaster(chain.anvil.rpcUrl, tolerated)
    const [first] = await signTransfers(1)
    await broadcaster.send(first!)
    // Mined already: the node answers "nonce too low", which means there is nothing to do.
    await expect(broadcaster.send(first!)).resolves.toBeUndefined()
    const broke = Wallet.createRandom()
    const unfunded = await broke.signTransaction({
      type: 2,
      chainId: chain.dev.chainId,
      nonce: 0,
      to: broke.address,
      value: 1n,
      gasLimit: 21_000,
      maxFeePerGas: 10n ** 11n,
      maxPriorityFeePerGas: 10n ** 9n,
    })
    const [next] = await signTransfers(1)
    const outcomes = await Promise.allSettled([broadcaster.send(unfunded), broadcaster.send(next!)])
    expect(outcomes[0]).toMatchObject({
      status: 'rejected',
      reason: { message: expect.stringMatching(/^eth_sendRawTransaction: .*(funds|balance)/i) },
    })
    expect(outcomes[1]).toEqual({ status: 'fulfilled', value: undefined })
  })

  it('drops what waits when the key is handed over: rejected with the reason, never posted', async () => {
    const proxy = await recordingProxy(chain.anvil.rpcUrl)
    try {
      const broadcaster = createOrderedBroadcaster(proxy.url, tolerated, { minIntervalMs: 1_000 })
      const [first, second, third] = await signTransfers(3)
      await broadcaster.send(first!)
      // Held for the interval after the first batch: still here when the key goes.
      const held = [broadcaster.send(second!), broadcaster.send(third!)]
      broadcaster.drop(new Error('sender key handed over'))
      const outcomes = await Promise.allSettled(held)
      expect(outcomes.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected'])
      expect(outcomes[0]).toMatchObject({ reason: { message: 'sender key handed over' } })
      // Past the interval, nothing more leaves; what is sent later goes as before.
      await new Promise((resolve) => setTimeout(resolve, 1_500))
      expect(proxy.requests).toHaveLength(1)
      await broadcaster.send(second!)
      expect(proxy.requests.map((nonces) => nonces.length)).toEqual([1, 1])
    } finally {
      await proxy.close()
    }
  })

  it('rejects every waiting transaction with the reason when the node cannot be reached', async () => {
    const broadcaster = createOrderedBroadcaster('http://127.0.0.1:9', tolerated, {
      timeoutMs: 2_000,
    })
    const raws = await signTransfers(3)
    const outcomes = await Promise.allSettled(raws.map((raw) => broadcaster.send(raw)))
    expect(outcomes.every((outcome) => outcome.status === 'rejected')).toBe(true)
  })
})
