import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startHeadWake } from '../../src/chain/endpoints/head-wake.ts'
import { startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { waitFor } from '../../src/dev/process.ts'

/** The listener's wake-up: a `newHeads` subscription on a chain's WebSocket endpoint, or nothing. */
describe('head wake', () => {
  let anvil: Anvil
  const lines: string[] = []
  const log = {
    debug: (_fields: Record<string, unknown>, message: string) => lines.push(message),
  } as unknown as Parameters<typeof startHeadWake>[3]

  beforeAll(async () => {
    anvil = await startAnvil()
  })
  afterAll(async () => {
    await anvil?.stop()
  })

  it('calls back at each new head of the first WebSocket endpoint', async () => {
    let heads = 0
    const wake = await startHeadWake([anvil.rpcUrl, anvil.wsUrl], anvil.chainId, () => heads++, log)
    try {
      // A block per look until three were notified (the subscription may open after the first), with
      // a bound that only catches a hang.
      await waitFor(
        'three heads notified',
        async () => {
          await mine(anvil.rpcUrl)
          return heads >= 3
        },
        30_000,
        50,
      )
      expect(heads).toBeGreaterThanOrEqual(3)
    } finally {
      await wake.stop()
    }
  })

  it('survives its node going away: the process goes on, the wake stops cleanly', async () => {
    const gone = await startAnvil()
    let heads = 0
    const wake = await startHeadWake([gone.wsUrl], gone.chainId, () => heads++, log)
    await gone.stop()
    // Whatever the closed socket does next happens within this pause (an 'error' with no listener
    // would end the test process).
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    await wake.stop()
    expect(heads).toBe(0)
  })

  it('subscribes again once its node is back after a restart', async () => {
    const node = await startAnvil()
    const port = Number(new URL(node.rpcUrl).port)
    let heads = 0
    const wake = await startHeadWake([node.wsUrl], node.chainId, () => heads++, log, 200)
    try {
      await node.stop()
      const again = await startAnvil({ port })
      try {
        // A block per look until one was notified from the restarted node; a bound for hangs only.
        await waitFor(
          'a head from the restarted node',
          async () => {
            await mine(again.rpcUrl)
            return heads >= 1
          },
          30_000,
          100,
        )
        expect(heads).toBeGreaterThanOrEqual(1)
      } finally {
        await wake.stop()
        await again.stop()
      }
    } finally {
      await wake.stop()
    }
  })

  it('without a WebSocket endpoint that opens, wakes nothing and says so at debug', async () => {
    lines.length = 0
    const closedPort = 'ws://127.0.0.1:9/'
    const wake = await startHeadWake([anvil.rpcUrl, closedPort], anvil.chainId, () => {}, log)
    await wake.stop()
    expect(lines).toEqual(['no newHeads subscription on a WebSocket endpoint: the listener polls'])
    const none = await startHeadWake([anvil.rpcUrl], anvil.chainId, () => {}, log)
    await none.stop()
    expect(lines).toHaveLength(1)
  })
})

async function mine(rpcUrl: string): Promise<void> {
  await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'evm_mine', params: [] }),
  })
}
