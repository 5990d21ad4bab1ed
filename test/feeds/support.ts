import { afterAll, beforeAll } from 'vitest'
import type { Anvil } from '../../src/dev/anvil.ts'
import { startAnvil } from '../../src/dev/anvil.ts'
import { getEndpoint } from '../../src/feeds/catalog/index.ts'
import {
  createFeedServer,
  type FeedServer,
  type FeedServerOptions,
} from '../../src/feeds/server/index.ts'

export const TEST_KEY = 'test-feed-key-7f3a9c'

/** A local feed service on a free loopback port with a dev chain for the blockchain family. */
export async function startFeedService(
  options: FeedServiceOptions = {},
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

export type FeedServiceOptions = FeedServerOptions & { withChain?: boolean }

/** A feed service of startFeedService, started before a file's tests and stopped after them. */
export interface FeedServiceUnderTest {
  readonly url: string
  readonly server: FeedServer
  /** GETs a catalog endpoint with TEST_KEY; `key: null` sends no key at all. */
  call(
    endpoint: string,
    params: Record<string, string>,
    key?: string | null,
  ): Promise<{ status: number; body: Record<string, unknown> }>
}

/** Starts a feed service in the calling file's beforeAll and stops it in its afterAll. */
export function useFeedService(options: FeedServiceOptions = {}): FeedServiceUnderTest {
  let service: Awaited<ReturnType<typeof startFeedService>> | undefined
  beforeAll(async () => {
    service = await startFeedService(options)
  })
  afterAll(async () => {
    await service?.stop()
  })
  const started = () => {
    if (!service) throw new Error('the feed service is not started (used outside a test?)')
    return service
  }
  return {
    get url() {
      return started().url
    },
    get server() {
      return started().server
    },
    call: (endpoint, params, key = TEST_KEY) =>
      get(started().url, getEndpoint(endpoint).path, {
        ...params,
        ...(key !== null ? { key } : {}),
      }),
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
