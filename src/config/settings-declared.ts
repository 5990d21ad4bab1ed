import { z } from 'zod'
import { parseAddressRange } from './address-ranges.ts'
import { boundSettings } from './settings-bounds.ts'
import { keystoreSettings } from './settings-keystore.ts'
import { runnerSettings } from './settings-runner.ts'
import { boolean, optional, positiveInt, url, withDefault } from './settings-kit.ts'

import type { SettingGroup } from './settings-kit.ts'

export type { SettingGroup, SettingInfo } from './settings-kit.ts'

/** The four feed families of the Data Feed Query Service; each has its own base URL and limits. */
export const FEED_FAMILIES = ['sports', 'blockchain', 'nft', 'weather'] as const
export type FeedFamily = (typeof FEED_FAMILIES)[number]

const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, { message: 'expected an address: 0x and 40 hex digits' })
const port = z.coerce.number().int().min(0).max(65_535)

/** The order of the secp256k1 group: a private key is a number in [1, n). */
const SECP256K1_ORDER = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n

export const privateKey = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, { message: 'expected a 0x-prefixed 32-byte hex private key' })
  .superRefine((value, context) => {
    // The format check above has already reported a value that is not 32 hex bytes.
    if (!/^0x[0-9a-fA-F]{64}$/.test(value)) return
    const number = BigInt(value)
    if (number === 0n)
      context.addIssue({
        code: 'custom',
        message:
          'is not a valid secp256k1 private key (it is zero); give the 0x-prefixed 32-byte key of an account the Operator authorises',
      })
    else if (number >= SECP256K1_ORDER)
      context.addIssue({
        code: 'custom',
        message:
          'is not a valid secp256k1 private key (it is not below the curve order); give the 0x-prefixed 32-byte key of an account the Operator authorises',
      })
  })

const addressRange = z.string().refine((entry) => parseAddressRange(entry) !== undefined, {
  message:
    'expected addresses or CIDR ranges, comma separated, such as 10.0.0.5,10.1.0.0/16,fd00::/8',
})

const commaList = z.string().transform((value) =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean),
)

const familyUrl = (family: string) =>
  optional(url, {
    group: 'feeds',
    unit: 'URL',
    description: `Base URL of the ${family} family of the Data Feed Query Service.`,
    whenUnset: `no ${family} fetch worker in this process`,
    example: 'http://127.0.0.1:8090',
  })

const rateLimit = (family: string) =>
  withDefault(positiveInt, 50, {
    group: 'fetch',
    unit: 'calls/s',
    description: `Calls to the ${family} family, for all fetch workers together (kept in Redis).`,
  })

const cacheTtl = (family: string, ms: number) =>
  withDefault(positiveInt, ms, {
    group: 'fetch',
    unit: 'ms',
    description: `How long a ${family} answer is shared by equal requests.`,
  })

/**
 * Every setting feedrunner reads, with its description, default, unit and sensitivity. The docs'
 * configuration table and `.env.example` are generated from this (`npm run docs:config`); add a
 * setting here and nowhere else.
 */
export const declaredSettings = {
  LOG_LEVEL: withDefault(
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']),
    'info',
    {
      group: 'logging',
      description:
        'Least severity written: fatal, error, warn, info, debug, trace or silent. The lines that say a part started, where it listens and that it stops are written at info under warn and error too (not under silent).',
    },
  ),
  LOG_FORMAT: optional(z.enum(['json', 'pretty']), {
    group: 'logging',
    description:
      "json (one pino object a line: a service process's stdout then carries nothing else, what libraries print included) or pretty (for people).",
    whenUnset: 'pretty on a terminal, json otherwise (a pipe, a file, a container log)',
  }),
  NO_COLOR: optional(z.string(), {
    group: 'logging',
    description: 'Any value turns colours off in pretty logs (no-color.org).',
    whenUnset: 'colours on a terminal',
  }),

  REDIS_URL: withDefault(
    z.string().regex(/^(rediss?|redis\+cluster):\/\//, {
      message:
        'expected redis://host:port[/db], rediss://... or redis+cluster://host:port[,host:port...]',
    }),
    'redis://127.0.0.1:6379',
    {
      group: 'redis',
      unit: 'URL',
      description:
        'The Redis that holds queues and run records; `redis+cluster://host:port[,host:port...]` for a Redis Cluster (any of its nodes; QUEUE_PREFIX then needs a hash tag).',
    },
  ),
  QUEUE_PREFIX: withDefault(
    z.string().regex(/^(?:[A-Za-z0-9_.:-]|\{[A-Za-z0-9_.:-]+\})+$/, {
      message: 'expected letters, digits and _.:- only, and {braces} around a hash tag',
    }),
    '{feedrunner}',
    {
      group: 'redis',
      description:
        'Prefix of every key, so several feedrunner installations can share one Redis. The braces are a Redis Cluster hash tag: every key of the installation lands in one slot, as BullMQ needs there.',
    },
  ),
  REDIS_START_WAIT_MS: withDefault(positiveInt, 15_000, {
    group: 'redis',
    unit: 'ms',
    description:
      'How long start, adapter, worker and runner wait for Redis to answer before anything else starts; then they stop with one line naming REDIS_URL.',
  }),
  OUTAGE_REPORT_INTERVAL_MS: withDefault(positiveInt, 60_000, {
    group: 'operations',
    unit: 'ms',
    description:
      'While a dependency (Redis, an RPC node, the feed service, a bridge) stays down, one line this often with the count of failed calls.',
  }),

  RPC_URL: optional(
    z
      .string()
      .regex(/^(https?|wss?):\/\//, { message: 'expected an http(s):// or ws(s):// JSON-RPC URL' }),
    {
      group: 'chain',
      unit: 'URL',
      description:
        'JSON-RPC endpoint of the chain the runner watches and sends on. Messages show only its host and port (a path may carry an API key).',
      whenUnset: 'no runner',
      example: 'http://127.0.0.1:8545',
    },
  ),
  CHAINS_FILE: optional(z.string().min(1), {
    group: 'chain',
    unit: 'path',
    description:
      'TOML file declaring several chains, each with its RPC endpoints, sender keys (by environment variable name), confirmations and gas (docs/chains.md). Replaces RPC_URL.',
    whenUnset: 'RPC_URL serves one chain',
    example: 'chains.toml',
  }),
  NODE_PRIVATE_KEY: optional(privateKey, {
    group: 'chain',
    sensitive: true,
    description:
      'The node key (0x + 64 hex): signs fulfilments, and signed ##signKey tokens (SIGNKEY_MODE=signed).',
    whenUnset: 'no runner, no signed keys',
  }),
  NODE_PRIVATE_KEYS: optional(commaList.pipe(z.array(privateKey)), {
    group: 'chain',
    sensitive: true,
    description:
      'Sender keys, comma separated; each is ordered by one runner process at a time, and the runner processes share them. Wins over NODE_PRIVATE_KEY for sending.',
    whenUnset: 'NODE_PRIVATE_KEY sends',
  }),
  ...keystoreSettings,
  JOBS_DIR: withDefault(z.string().min(1), 'jobs', {
    group: 'chain',
    description:
      "Folder of the job specs (Chainlink TOML) the runner serves, or several folders separated by commas (each folder's own specs, not its subfolders); the runner watches the Operators they name.",
  }),
  ...runnerSettings,

  SPORTS_URL: familyUrl('sports'),
  BLOCKCHAIN_URL: familyUrl('blockchain'),
  NFT_URL: familyUrl('NFT'),
  WEATHER_URL: familyUrl('weather'),
  FEED_API_KEY: optional(z.string().min(1, { message: 'expected a non-empty key' }), {
    group: 'feeds',
    sensitive: true,
    description: 'Key of the Data Feed Query Service, sent in place of ##signKey (static mode).',
    whenUnset: 'requests that need a key fail upstream',
  }),
  SIGNKEY_MODE: withDefault(z.enum(['static', 'signed']), 'static', {
    group: 'feeds',
    description:
      'static: ##signKey becomes FEED_API_KEY; signed: a short-lived token signed with NODE_PRIVATE_KEY.',
  }),
  SIGNKEY_TTL_SECONDS: withDefault(positiveInt, 300, {
    group: 'feeds',
    unit: 's',
    description: 'Lifetime of a signed token.',
  }),
  ALLOW_CLIENT_KEYS: withDefault(boolean, false, {
    group: 'feeds',
    description: 'Accept a literal key in a request instead of ##signKey.',
  }),
  ADAPTER_CLIENT_KEY_FETCHES: withDefault(positiveInt, 32, {
    group: 'feeds',
    unit: 'fetches',
    description:
      "Fetches with a client's own key (ALLOW_CLIENT_KEYS) one adapter process runs at once (they are never queued: the key reaches no Redis record). Past it a fetch waits, a free slot going to the client with the fewest running, for up to ADAPTER_TIMEOUT_MS; then it is refused (503).",
  }),

  // Attempts x timeout + backoff (3 x 5 s + 0.6 s) stays inside ADAPTER_TIMEOUT_MS, which stays inside the specs' bridge timeout (20 s).
  FETCH_TIMEOUT_MS: withDefault(positiveInt, 5_000, {
    group: 'fetch',
    unit: 'ms',
    description: 'One call to the feed service.',
  }),
  FETCH_ATTEMPTS: withDefault(positiveInt, 3, {
    group: 'fetch',
    unit: 'attempts',
    description: 'Tries of a fetch (timeouts, 5xx and connection errors are retried; 4xx never).',
  }),
  FETCH_BACKOFF_MS: withDefault(positiveInt, 200, {
    group: 'fetch',
    unit: 'ms',
    description: 'First wait before a retry; doubles each time.',
  }),
  FETCH_WORKER_CONCURRENCY: withDefault(positiveInt, 32, {
    group: 'fetch',
    unit: 'fetches',
    description:
      "Most fetches one worker process runs at once, per family. The worker runs fewer while a fetch's time grows with how many run beside it (this host's CPU is the bound), down to FETCH_WORKER_MIN_CONCURRENCY.",
  }),
  FETCH_WORKER_MIN_CONCURRENCY: withDefault(positiveInt, 2, {
    group: 'fetch',
    unit: 'fetches',
    description:
      'Fewest fetches one worker process runs at once, per family, when fetches slow down with their number. Equal to FETCH_WORKER_CONCURRENCY (or above it), the number is fixed.',
  }),
  FETCH_FAILED_JOBS_KEPT: withDefault(positiveInt, 1_000, {
    group: 'fetch',
    unit: 'jobs',
    description:
      'Failed fetch jobs kept in Redis per family for inspection (status, dashboard); older ones are removed as new ones fail.',
  }),
  FETCH_FAILED_JOBS_KEPT_SECONDS: withDefault(positiveInt, 300, {
    group: 'fetch',
    unit: 's',
    description:
      'How long a failed fetch job is kept; the fetch workers sweep older ones (and completed ones past their cache TTL) every half of this, at most every minute.',
  }),
  RATE_LIMIT_SPORTS_PER_SECOND: rateLimit('sports'),
  RATE_LIMIT_BLOCKCHAIN_PER_SECOND: rateLimit('blockchain'),
  RATE_LIMIT_NFT_PER_SECOND: rateLimit('NFT'),
  RATE_LIMIT_WEATHER_PER_SECOND: rateLimit('weather'),
  CACHE_TTL_SPORTS_MS: cacheTtl('sports', 30_000),
  CACHE_TTL_BLOCKCHAIN_MS: cacheTtl('blockchain', 5_000),
  CACHE_TTL_NFT_MS: cacheTtl('NFT', 60_000),
  CACHE_TTL_WEATHER_MS: cacheTtl('weather', 300_000),

  EA_HOST: withDefault(z.string().min(1), '127.0.0.1', {
    group: 'adapter',
    unit: 'address',
    description:
      "The address the adapter, its metrics and a worker's or runner's OPERATIONS_PORT listen on (the EA framework's own setting; feedrunner gives it this default, loopback, where the framework's is every interface). `0.0.0.0` or `::` for every interface, as the container image sets it; off loopback, the start says what it exposes.",
  }),
  EA_PORT: withDefault(positiveInt.max(65_535), 8080, {
    group: 'adapter',
    unit: 'port',
    description:
      "The adapter's HTTP port (the EA framework's own setting; feedrunner gives it this default).",
  }),
  METRICS_PORT: withDefault(port, 9080, {
    group: 'adapter',
    unit: 'port',
    description:
      "/metrics of the adapter's process (`adapter`, `start`): the EA framework's own setting, with its default; off with the framework's METRICS_ENABLED=false. The dev stack serves /metrics on the adapter's port instead.",
  }),
  ADAPTER_TIMEOUT_MS: withDefault(positiveInt, 18_000, {
    group: 'adapter',
    unit: 'ms',
    description:
      'How long an adapter request waits for its queued fetch (with retries) before answering 504.',
  }),
  ADAPTER_TRUSTED_PROXIES: optional(commaList.pipe(z.array(addressRange)), {
    group: 'adapter',
    unit: 'addresses',
    description:
      "Reverse proxies or load balancers in front of the adapter, comma separated addresses or CIDR ranges (`10.0.0.5,fd00::/8`). A request from one of them is counted, for the fetch queues' fair shares, by the last address of its X-Forwarded-For that is not itself one of them; X-Forwarded-For from any other address is ignored.",
    whenUnset: 'no proxy trusted: every client is its socket address',
    example: '10.0.0.5',
  }),

  FEEDS_SERVER_KEYS: optional(commaList, {
    group: 'feed-service',
    sensitive: true,
    description: 'Keys the local feed service (feedrunner feeds serve) accepts, comma separated.',
    whenUnset: '--keys, or only signed keys (FEEDS_SERVER_SIGNERS)',
  }),
  FEEDS_SERVER_SIGNERS: optional(commaList.pipe(z.array(address)), {
    group: 'feed-service',
    description:
      'Node addresses whose signed keys the local feed service accepts, comma separated.',
    whenUnset: '--signers, or none',
  }),

  REQUESTER_PRIVATE_KEY: optional(privateKey, {
    group: 'dev',
    sensitive: true,
    description: 'The account `feedrunner request` sends requests from.',
    whenUnset: "the dev chain's first funded account",
  }),
  CONSUMER_ADDRESS: optional(address, {
    group: 'dev',
    description: 'The FeedConsumer `feedrunner request` sends through.',
    whenUnset: "the dev stack's FeedConsumer",
  }),
  DEV_STATE_FILE: optional(z.string().min(1), {
    group: 'dev',
    description:
      'Where `feedrunner dev` records where it runs, and where status, runs show, request and jobs run look for it.',
    whenUnset: '.feedrunner/dev.json in the checkout (git ignores it)',
  }),

  HEAP_GROWTH_PERCENT: withDefault(z.coerce.number().int().min(0).max(300), 30, {
    group: 'operations',
    unit: 'percent',
    description:
      "How far V8 lets the heap grow past its live objects before the next full collection; 0 keeps V8's own (up to 4x; src/config/heap-growth.ts).",
  }),
  OPERATIONS_PORT: withDefault(port, 9090, {
    group: 'operations',
    unit: 'port',
    description:
      '/metrics, /live and /ready of a process without the adapter (runner, worker); 0 = off.',
  }),
  DASHBOARD_ENABLED: withDefault(boolean, false, {
    group: 'operations',
    description: "Queues (Bull Board) and recent runs at DASHBOARD_PATH on the adapter's server.",
  }),
  DASHBOARD_PATH: withDefault(
    z.string().regex(/^\/[A-Za-z0-9_\-/]*[A-Za-z0-9_-]$/, {
      message: 'expected a path such as /dashboard (no trailing slash)',
    }),
    '/dashboard',
    { group: 'operations', description: 'Where the dashboard is served.' },
  ),
  DASHBOARD_TOKEN: optional(
    z.string().min(24, { message: 'expected a random secret of at least 24 characters' }),
    {
      group: 'operations',
      sensitive: true,
      description:
        'Required to open the dashboard (HTTP Basic password, any user name, or `Authorization: Bearer`); the adapter refuses to start with the dashboard on a non-loopback EA_HOST without it.',
      whenUnset: 'the dashboard is served only when the adapter listens on loopback',
    },
  ),
  DASHBOARD_READ_ONLY: withDefault(boolean, true, {
    group: 'operations',
    description:
      'The dashboard shows and never changes (no retry, remove, pause); false lets it act on jobs.',
  }),

  ...boundSettings,
}

/** Families of variables named by pattern: documented, read where they are used. */
export const SETTING_PATTERNS: ReadonlyArray<{
  pattern: string
  group: SettingGroup
  description: string
  sensitive?: boolean
  example: string
}> = [
  {
    pattern: 'BRIDGE_<NAME>_URL',
    group: 'chain',
    description:
      'URL of a job spec\'s `bridge name="<name>"` (name upper-cased, other characters as _).',
    example: 'BRIDGE_DATAFEED_URL=http://127.0.0.1:8080',
  },
  {
    pattern: 'FEED_KEY_<NAME>',
    group: 'feeds',
    sensitive: true,
    description: 'Extra feed keys a request may name as key=##env:FEED_KEY_<NAME>.',
    example: 'FEED_KEY_PARTNER=',
  },
]
