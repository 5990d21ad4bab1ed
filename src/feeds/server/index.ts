import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import {
  entryByPath,
  validateParams,
  type CatalogEntry,
  type EndpointName,
} from '../catalog/index.ts'
import { checkKey, UsedSignedKeys } from './auth.ts'
import type { BlockchainSource } from './blockchain/index.ts'
import { loadDataSet, type FeedDataSet } from './data/index.ts'
import { errorEnvelope, successEnvelope } from './envelope.ts'
import { FeedServiceError } from './errors.ts'
import { routeHandlers } from './routes.ts'

export { FeedServiceError } from './errors.ts'

/** One authorised, valid call, handed to the fault hook before it is answered. */
export interface FeedCall {
  readonly endpoint: EndpointName
  readonly path: string
  /** The query as given, without `key`. */
  readonly query: Readonly<Record<string, string>>
  /** Computes the answer the service would give (HTTP status and envelope). */
  answer(): Promise<{ httpStatus: number; body: Record<string, unknown> }>
}

/**
 * Fault hook (the fault search's `--faults`, which must reach every answer the service gives): may answer the call itself (an error, a delay, a broken body,
 * a mangled answer) and then returns true; returning false lets the service answer normally.
 */
export type FeedServerIntercept = (
  call: FeedCall,
  response: ServerResponse,
) => Promise<boolean> | boolean

export interface FeedServerOptions {
  /** Static keys accepted in `key`. */
  keys?: readonly string[]
  /** Node addresses whose signed keys (signed `##signKey` mode) are accepted. */
  signers?: readonly string[]
  /** Blockchain id -> JSON-RPC URL for the blockchain family (ethereum-mainnet is also served from recorded data). */
  chains?: Record<string, string>
  /** A blockchain source instead of one built from `chains` (closed with the server either way). */
  blockchain?: BlockchainSource
  /** Defaults to 127.0.0.1. */
  host?: string
  /** Clock in epoch ms (tests pin it). */
  now?: () => number
  intercept?: FeedServerIntercept
  dataSet?: FeedDataSet
  /** Where unexpected errors are reported; defaults to stderr. */
  log?: (line: string) => void
}

export interface FeedServer {
  /** Starts listening (port 0 = any free port); resolves with the base URL every family is served from. */
  listen(port?: number): Promise<string>
  close(): Promise<void>
  /** Base URL once listening, e.g. http://127.0.0.1:4567. */
  readonly url: string
  /** Requests received for a path (e.g. `/api/v4/game-odds`), or in total without a path. */
  requestCount(path?: string): number
  /** Requests per path. */
  stats(): Record<string, number>
}

function send(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  })
  response.end(text)
}

interface ParsedQuery {
  key: string | undefined
  /** Everything but `key`, as given: the echo. */
  query: Record<string, string>
}

function parseQuery(searchParams: URLSearchParams): ParsedQuery {
  const query: Record<string, string> = {}
  let key: string | undefined
  const seen = new Set<string>()
  for (const [name, value] of searchParams) {
    if (seen.has(name)) throw new FeedServiceError(400, `parameter ${name} is given more than once`)
    seen.add(name)
    if (name === 'key') key = value
    else query[name] = value
  }
  return { key, query }
}

/** The local Data Feed Query Service: every catalog route, the envelope, the key check, the data set. */
export function createFeedServer(options: FeedServerOptions = {}): FeedServer {
  return new LocalFeedService(options)
}

type Answer = { httpStatus: number; body: Record<string, unknown> }

class LocalFeedService implements FeedServer {
  private readonly keys: readonly string[]
  private readonly signers: readonly string[]
  private readonly now: () => number
  private readonly log: (line: string) => void
  private readonly data: FeedDataSet
  private blockchainSource: Promise<BlockchainSource> | undefined
  private readonly counts = new Map<string, number>()
  private readonly usedSignedKeys = new UsedSignedKeys()
  private server: Server | undefined
  private baseUrl = ''

  constructor(private readonly options: FeedServerOptions) {
    this.keys = options.keys ?? []
    this.signers = options.signers ?? []
    if (this.keys.length === 0 && this.signers.length === 0)
      throw new Error('feed service: give at least one key (--keys) or signer (--signers)')
    this.now = options.now ?? Date.now
    this.log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`))
    this.data = options.dataSet ?? loadDataSet()
    this.blockchainSource = options.blockchain ? Promise.resolve(options.blockchain) : undefined
  }

  get url(): string {
    return this.baseUrl
  }

  async listen(port = 0): Promise<string> {
    const host = this.options.host ?? '127.0.0.1'
    const handle = (request: IncomingMessage, response: ServerResponse) =>
      this.handle(request, response)
    ;({ server: this.server, url: this.baseUrl } = await serveHttp(
      handle,
      host,
      port,
      this.log,
      this.now,
    ))
    return this.baseUrl
  }

  async close(): Promise<void> {
    const current = this.server
    this.server = undefined
    if (current) {
      current.closeAllConnections()
      await new Promise<void>((resolve) => current.close(() => resolve()))
    }
    if (this.blockchainSource) await (await this.blockchainSource).close()
  }

  requestCount(path?: string): number {
    if (path === undefined) return [...this.counts.values()].reduce((sum, count) => sum + count, 0)
    return this.counts.get(path) ?? 0
  }

  stats(): Record<string, number> {
    return Object.fromEntries(this.counts)
  }

  /** Loaded on the first blockchain request, so the service starts fast. */
  private blockchain(): Promise<BlockchainSource> {
    this.blockchainSource ??= import('./blockchain/index.ts').then(({ createBlockchainSource }) =>
      createBlockchainSource({ chains: this.options.chains ?? {} }),
    )
    return this.blockchainSource
  }

  private async answer(entry: CatalogEntry, query: Record<string, string>): Promise<Answer> {
    const validation = validateParams(entry, query)
    if (!validation.ok) throw new FeedServiceError(400, validation.message)
    const result = await routeHandlers[entry.name](validation.params, {
      data: this.data,
      blockchain: () => this.blockchain(),
      now: this.now(),
    })
    return { httpStatus: 200, body: successEnvelope(entry, query, result, this.now()) }
  }

  /** One request: counted by path, then refused (404, 400, 401), handed to the fault hook, or answered. */
  private async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const requestUrl = new URL(request.url ?? '/', 'http://local')
    const path = requestUrl.pathname.replace(/\/+$/, '') || '/'
    this.counts.set(path, (this.counts.get(path) ?? 0) + 1)
    if (path === '/_stats') return send(response, 200, { requests: this.stats() })
    const entry = entryByPath(path)
    let query: Record<string, string> | undefined
    try {
      if (!entry) throw new FeedServiceError(404, `no endpoint at ${path.slice(0, 100)}`)
      if (request.method !== 'GET')
        throw new FeedServiceError(400, `method ${request.method} is not supported: use GET`)
      const parsed = parseQuery(requestUrl.searchParams)
      const given = parsed.query
      query = given
      const keyCheck = { keys: this.keys, signers: this.signers, used: this.usedSignedKeys }
      await checkKey(keyCheck, parsed.key, entry.name, given, this.now())
      const call: FeedCall = {
        endpoint: entry.name,
        path,
        query: given,
        answer: () => this.answer(entry, given),
      }
      if (this.options.intercept && (await this.options.intercept(call, response))) return
      const { httpStatus, body } = await call.answer()
      send(response, httpStatus, body)
    } catch (error) {
      this.sendError(response, error, path, query, entry)
    }
  }

  /** A refusal as its own status; anything else is logged and answered 500. */
  private sendError(
    response: ServerResponse,
    error: unknown,
    path: string,
    query: Record<string, string> | undefined,
    entry: CatalogEntry | undefined,
  ): void {
    if (error instanceof FeedServiceError)
      return send(
        response,
        error.status,
        errorEnvelope(error.status, error.description, query, entry, this.now()),
      )
    this.log(
      `feed service: unexpected error on ${path}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    )
    send(
      response,
      500,
      errorEnvelope(500, 'internal error of the feed service', query, entry, this.now()),
    )
  }
}

/** Serves `handle` on `host:port`; an error that escapes it answers 500 (or ends a response begun). */
async function serveHttp(
  handle: (request: IncomingMessage, response: ServerResponse) => Promise<void>,
  host: string,
  port: number,
  log: (line: string) => void,
  now: () => number,
): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      log(`feed service: ${String(error)}`)
      if (!response.headersSent)
        send(
          response,
          500,
          errorEnvelope(500, 'internal error of the feed service', undefined, undefined, now()),
        )
      else response.destroy()
    })
  })
  server.keepAliveTimeout = 5_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  const address = server.address() as AddressInfo
  return { server, url: `http://${host.includes(':') ? `[${host}]` : host}:${address.port}` }
}
