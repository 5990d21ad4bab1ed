import { readFileSync, writeFileSync } from 'node:fs'
import { catalogEntries, feedCatalog, type CatalogEntry, type ParamSpec } from './catalog/index.ts'

// The "Feeds" section of docs/feeds.md, generated from the catalog so the two cannot disagree
// (`feedrunner feeds docs --write`; a test checks the page is current).

/** The page the section lives in. */
export const FEEDS_PAGE = 'docs/feeds.md'
export const README_START = '<!-- feeds:start -->'
export const README_END = '<!-- feeds:end -->'

function paramCell(spec: ParamSpec): string {
  const name = spec.required ? `\`${spec.name}\`` : `\`${spec.name}\`?`
  if (spec.options)
    return `${name} (${spec.options.join(' \\| ')}${spec.default ? `; default ${spec.default}` : ''})`
  return name
}

function endpointRow(entry: CatalogEntry): string {
  const params = Object.values(entry.params).map(paramCell).join(', ')
  const aliases = Object.entries(entry.aliases)
    .map(
      ([canonical, others]) =>
        `\`${canonical}\` = ${others.map((other) => `\`${other}\``).join(', ')}`,
    )
    .join('; ')
  return `| \`${entry.name}\` | ${entry.family} | \`${entry.path}\` | ${params} | ${entry.defaultResultPath ? `\`${entry.defaultResultPath}\`` : '-'} | ${aliases || '-'} |`
}

function exampleQuery(params: Readonly<Record<string, string>>): string {
  return new URLSearchParams({ ...params, key: '##signKey' }).toString()
}

/** The catalog as a table: one row per endpoint. */
function endpointsTable(): string[] {
  return [
    '## Feeds',
    '',
    'Every feed endpoint is one entry of the catalog (`src/feeds/catalog/`): upstream path, parameters',
    "(zod, with the service's own names), the zod schema of `data`, field aliases and the default result.",
    'The adapter endpoints, the local feed service and this table are derived from it',
    '(`feedrunner feeds docs --write` regenerates this section; a test checks it is current).',
    '`name?` marks an optional parameter; every request also carries `key`.',
    '',
    '| endpoint | family | path | parameters | default result | aliases (canonical = others) |',
    '|---|---|---|---|---|---|',
    ...catalogEntries.map(endpointRow),
  ]
}

/** Weather's parameter sets, which share one path and so one row of the endpoint table. */
function weatherVariants(): string[] {
  return [
    'Weather has three parameter sets on one path:',
    '',
    '| variant | parameters | example |',
    '|---|---|---|',
    ...(feedCatalog.weather.variants ?? []).map(
      (variant) =>
        `| ${variant.name} | ${variant.params.map((name) => `\`${name}\``).join(', ')} | \`${exampleQuery(variant.example)}\` |`,
    ),
  ]
}

const PARAMETER_RULES = [
  'Parameter rules: `region`, `sport` and `unitOfMeasure` take only their listed values (any case; `+` for',
  'a space); `date` is `YYYY-MM-DD` and a real calendar date; `dateTime` is `YYYY-MM-DDTHH:mm:ss`;',
  'latitude is within -90..90 and longitude within -180..180; addresses are `0x` + 40 hex digits and',
  'transaction hashes `0x` + 64 hex digits; `token_id` is a uint256. A bad value is a 400 whose message',
  'names the parameter (`parameter date must be a real calendar date (got "2024-02-30")`).',
]

const DECISIONS = [
  "### Decisions where the service's specification is silent",
  '',
  '- Weather with both an address and coordinates is a 400 (ambiguous). Coordinates need `dateTime`',
  '  (the specification lists geo-location only as a forecast). `unitOfMeasure` defaults to `metric`.',
  '- `collection_contract_address` is required.',
  "- Canonical field names are the field table's (`windGust`, `goalkeeperGoalAgainst`, `penaltyKicksGoals`,",
  '  `periodResult`, `marketplace_version`); the client adds them next to the sample spellings the service',
  '  sends, so a path may use either.',
  '- Where the field table says "string" and the sample has a number (`logIndex`, `owner`, `status` of',
  '  a game, fee basis points), both are accepted; anything else is a data drift error naming the field.',
  '- `drawMoneyLine` is null for sports without a draw (basketball). `startTime` is epoch seconds, as in',
  "  the service's sample.",
  "- Errors: the envelope with `result: 'error'`, `status` 400 (bad parameter), 401 (missing or refused",
  '  key; the key is never echoed), 404 (no such game, collection, address, chain or path), 500; the HTTP',
  '  status is the same. A parameter given twice is a 400; unknown parameters are ignored (and echoed).',
]

const KEYS = [
  '### Keys: `##signKey` and `##env:NAME`',
  '',
  'Requests carry `key=##signKey`; the fetch worker replaces it when it builds the outgoing URL, so the key',
  'never enters a queue, cache key, log line or response. `SIGNKEY_MODE=static` sends `FEED_API_KEY`.',
  '`SIGNKEY_MODE=signed` sends a token `v1.<claims>.<signature>`: the claims bind the request id, the',
  'endpoint, a hash of the other parameters, the node address, an expiry (`SIGNKEY_TTL_SECONDS`) and a',
  'random id, signed with `NODE_PRIVATE_KEY` (EIP-191); every call gets a new one. Feed operators check it with',
  '`verifySignKey(token, { endpoint, params, allowedSigners })` from `src/signkey`, which refuses a wrong',
  'signer, an expired or tampered token, and a token replayed for other parameters or another endpoint.',
  '`key=##env:NAME` sends the variable NAME, which must be `FEED_API_KEY` or `FEED_KEY_*` (a request must',
  'not be able to read other secrets); placeholders in any other parameter are refused, and a literal key',
  'from a request is refused unless `ALLOW_CLIENT_KEYS=true`.',
]

/** How to run the local feed service, with a request built from the catalog's own example. */
function localService(): string[] {
  return [
    '### The local Data Feed Query Service',
    '',
    '```sh',
    'feedrunner feeds serve --port 8090 --keys k1,k2 --signers 0x70997970C51812dc3A010C7d01b50e0d17dc79C8 --chain local=http://127.0.0.1:8545',
    `curl '${`http://127.0.0.1:8090${feedCatalog['game-odds'].path}?${new URLSearchParams({ ...feedCatalog['game-odds'].example, key: 'k1' }).toString()}`}'`,
    '```',
    '',
    'All four families are served on one port (set `SPORTS_URL`, `BLOCKCHAIN_URL`, `NFT_URL` and',
    '`WEATHER_URL` to it). Keys come from `--keys` or `FEEDS_SERVER_KEYS`; signed keys are accepted for the',
    'node addresses in `--signers`, each key once. Its data set is in `src/feeds/server/data/` (every record keeps its',
    'provenance): EPL 2024-25 gameweek 1 (real results, half-time scores, Bet365 decimal odds, player',
    'minutes/goals/assists/cards/saves for two matches; statistics the sources lack are null), five NBA',
    "games (real scores, synthetic odds, no quarter scores), eight NFT collections (the service's own",
    'SuperRare contract record, OpenSea records for CryptoKitties and CryptoPunks, synthetic elsewhere) and',
    'eight cities. `homeTeam` matches the full or short name in any case. `region` is checked but does not',
    'select games. Weather readings are synthetic and deterministic: derived from a hash of the place and',
    "time asked (current weather changes once an hour), within the data set's ranges, with sunrise and",
    'sunset from the sunrise equation; imperial answers convert the metric ones. The blockchain family is',
    'answered live from the `--chain` nodes, and from recorded mainnet records under `ethereum-mainnet`.',
    'GET `/_stats` returns request counts per path. The data files were generated from a research',
    'reference that is not part of the repository, by `src/feeds/server/data/build.ts`.',
  ]
}

/** The whole section, markers excluded: the catalog's tables, then the prose around them. */
export function feedsReadmeSection(): string {
  return [
    ...endpointsTable(),
    '',
    ...weatherVariants(),
    '',
    ...PARAMETER_RULES,
    '',
    ...DECISIONS,
    '',
    ...KEYS,
    '',
    ...localService(),
  ].join('\n')
}

/** Page text with the section between the markers replaced. */
export function withFeedsSection(readme: string): string {
  const start = readme.indexOf(README_START)
  const end = readme.indexOf(README_END)
  if (start === -1 || end === -1 || end < start)
    throw new Error(`markers ${README_START} ... ${README_END} not found`)
  return `${readme.slice(0, start + README_START.length)}\n${feedsReadmeSection()}\n${readme.slice(end)}`
}

/** Rewrites the section in a page (docs/feeds.md); returns whether it changed. */
export function writeFeedsSection(path: string): boolean {
  const before = readFileSync(path, 'utf8')
  const after = withFeedsSection(before)
  if (after !== before) writeFileSync(path, after)
  return after !== before
}
