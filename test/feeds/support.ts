import type { Anvil } from '../../src/dev/anvil.ts'
import { startAnvil } from '../../src/dev/anvil.ts'
import {
  createFeedServer,
  type FeedServer,
  type FeedServerOptions,
} from '../../src/feeds/server/index.ts'

export const TEST_KEY = 'test-feed-key-7f3a9c'

/** A local feed service on a free loopback port with a dev chain for the blockchain family. */
export async function startFeedService(
  options: FeedServerOptions & { withChain?: boolean } = {},
): Promise<{ server: FeedServer; url: string; anvil?: Anvil; stop(): Promise<void> }> {
  const anvil = options.withChain ? await startAnvil() : undefined
  const server = createFeedServer({
    keys: [TEST_KEY],
    ...options,
    ...(anvil ? { chains: { local: anvil.rpcUrl } } : {}),
  })
  const url = await server.listen(0)
  return {
    server,
    url,
    ...(anvil ? { anvil } : {}),
    async stop() {
      await server.close()
      await anvil?.stop()
    },
  }
}

/** GET a path with a query (values encoded as a browser would) and parse the JSON body. */
export async function get(
  base: string,
  path: string,
  query: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const url = new URL(base + path)
  url.search = new URLSearchParams(query).toString()
  const response = await fetch(url)
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}
