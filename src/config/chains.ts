import { readFileSync } from 'node:fs'
import { parse as parseToml, TomlError } from 'smol-toml'
import { computeAddress } from 'ethers'
import { z } from 'zod'
import { privateKey } from './settings-declared.ts'
import { endpointOf, SettingsError, type Settings } from './settings.ts'

/**
 * The chains a runner serves: from CHAINS_FILE (TOML, any number of chains, each with one or more RPC
 * endpoints and its own sender keys), or the one-chain shorthand RPC_URL + NODE_PRIVATE_KEY(S).
 */
export interface ChainConfig {
  /** Known from the file; for the RPC_URL shorthand, asked of the node at start. */
  chainId: number | undefined
  /** How messages name the chain: `chain 137 (polygon)`, or `the RPC_URL chain`. */
  label: string
  endpoints: EndpointConfig[]
  /** Sender keys; never logged. */
  keys: string[]
  /** Blocks a fulfilment's receipt must be deep (TX_CONFIRMATIONS unless the chain says). */
  confirmations: number
  /** Blocks after which a mined fulfilment can no longer be reorged away (CHAIN_FINALITY_DEPTH unless the chain says). */
  finalityDepth: number
  /** How often heads are polled on this chain's HTTP endpoints (CHAIN_POLL_INTERVAL_MS unless the chain says). */
  pollIntervalMs: number
  /** An endpoint this many blocks behind the chain's best is taken out of its pool until it catches up. */
  maxLagBlocks?: number
  gas: GasConfig
  /** The chain's least incoming confirmations (MIN_INCOMING_CONFIRMATIONS unless the chain says); unset: by chain id. */
  minIncomingConfirmations?: number
  /** The least payment of a request whose job sets none (MIN_CONTRACT_PAYMENT_LINK_JUELS unless the chain says). */
  minContractPaymentLinkJuels: bigint
  /** The AuthorizedForwarder of jobs with forwardingAllowed (FORWARDER_ADDRESS unless the chain says). */
  forwarder?: string
}

/** What a chain adds to each of its jobs, as a Chainlink node's chain config does. */
export interface JobChainDefaults {
  /** A job waits at least this long: max(the job's minIncomingConfirmations, this). */
  minIncomingConfirmations: number
  /** Used when the job sets no minContractPaymentLinkJuels. */
  minContractPaymentLinkJuels: bigint
  /** The chain's AuthorizedForwarder, for jobs with forwardingAllowed. */
  forwarder?: string
  /** The addresses of the chain's sender keys (what an ethtx `from` must list). */
  senders?: readonly string[]
}

/** Chain ids of local dev chains (anvil and Hardhat, Chainlink's simulated chain): blocks come only with transactions. */
export const DEV_CHAIN_IDS: readonly number[] = [31337, 1337]

/** Chainlink's default EVM.MinIncomingConfirmations. */
const CHAINLINK_MIN_INCOMING_CONFIRMATIONS = 3

/** The chain's defaults for its jobs; confirmations not configured are 1 on a dev chain, else Chainlink's 3. */
export function jobChainDefaults(
  chain: Pick<ChainConfig, 'minIncomingConfirmations' | 'minContractPaymentLinkJuels'> &
    Partial<Pick<ChainConfig, 'forwarder' | 'keys'>>,
  chainId: number,
): JobChainDefaults {
  return {
    forwarder: chain.forwarder,
    senders: chain.keys?.map((key) => computeAddress(key)),
    minIncomingConfirmations:
      chain.minIncomingConfirmations ??
      (DEV_CHAIN_IDS.includes(chainId) ? 1 : CHAINLINK_MIN_INCOMING_CONFIRMATIONS),
    minContractPaymentLinkJuels: chain.minContractPaymentLinkJuels,
  }
}

export interface EndpointConfig {
  url: string
  /** Only signed transactions go there: no reads, no heads. */
  sendOnly: boolean
  /**
   * Where the endpoint is configured, for messages: `RPC_URL`, or `CHAINS_FILE chains.toml chain 137
   * endpoint 2`. With the host and port (never the URL's path or query) it names the endpoint.
   */
  setting: string
}

export interface GasConfig {
  /** Gas limit of a fulfilment whose spec names none. */
  limit?: number
  priorityFeeWei?: bigint
  maxFeePerGasCapWei?: bigint
  /** A transaction not mined after this many blocks is sent again with higher fees. */
  bumpAfterBlocks?: number
}

const wei = z
  .union([z.int().nonnegative(), z.string().regex(/^[0-9]+$/, { message: 'expected wei digits' })])
  .transform((value) => BigInt(value))

const endpointSchema = z.strictObject({
  url: z.string().regex(/^(https?|wss?):\/\/[^\s]+$/, {
    message: 'expected an http(s):// or ws(s):// JSON-RPC URL',
  }),
  send_only: z.boolean().default(false),
})

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, {
  message: 'expected the name of an environment variable that holds the key, not a key',
})

const chainSchema = z.strictObject({
  chain_id: z.int().positive(),
  name: z.string().min(1).optional(),
  endpoints: z.array(endpointSchema).min(1, { message: 'a chain needs at least one endpoint' }),
  keys_env: z.array(envName).min(1).optional(),
  confirmations: z.int().positive().optional(),
  finality_depth: z.int().positive().optional(),
  poll_interval_ms: z.int().positive().optional(),
  max_lag_blocks: z.int().positive().optional(),
  min_incoming_confirmations: z.int().nonnegative().max(1000).optional(),
  min_contract_payment_link_juels: wei.optional(),
  forwarder_address: z
    .string()
    .regex(/^0x[0-9a-fA-F]{40}$/, { message: 'expected an address: 0x and 40 hex digits' })
    .optional(),
  gas: z
    .strictObject({
      limit: z.int().min(21_000).optional(),
      priority_fee_wei: wei.optional(),
      max_fee_per_gas_cap_wei: wei.optional(),
      bump_after_blocks: z.int().positive().optional(),
    })
    .default({}),
})

const fileSchema = z.strictObject({
  chains: z.array(chainSchema).min(1, { message: 'declare at least one [[chains]] table' }),
})

type ChainEntry = z.infer<typeof chainSchema>

/**
 * The chains of this runner: CHAINS_FILE's when set, else the RPC_URL shorthand's one chain, else
 * none. Every problem names the file, the chain and the field; a key or a URL's path never shows.
 */
export function chainsFromSettings(
  settings: Settings,
  env: NodeJS.ProcessEnv = process.env,
): ChainConfig[] {
  if (settings.CHAINS_FILE) {
    if (settings.RPC_URL)
      throw new SettingsError([
        `RPC_URL and CHAINS_FILE are both set: declare the RPC_URL chain in ${settings.CHAINS_FILE} and unset RPC_URL, or unset CHAINS_FILE`,
      ])
    return readChainsFile(settings.CHAINS_FILE, settings, env)
  }
  if (!settings.RPC_URL) return []
  return [
    {
      chainId: undefined,
      label: 'the RPC_URL chain',
      endpoints: [{ url: settings.RPC_URL, sendOnly: false, setting: 'RPC_URL' }],
      keys: shorthandKeys(settings, 'the runner (it signs the fulfilments)'),
      confirmations: settings.TX_CONFIRMATIONS,
      finalityDepth: settings.CHAIN_FINALITY_DEPTH,
      pollIntervalMs: settings.CHAIN_POLL_INTERVAL_MS,
      gas: {},
      minIncomingConfirmations: settings.MIN_INCOMING_CONFIRMATIONS,
      minContractPaymentLinkJuels: BigInt(settings.MIN_CONTRACT_PAYMENT_LINK_JUELS),
      forwarder: settings.FORWARDER_ADDRESS,
    },
  ]
}

/** NODE_PRIVATE_KEYS when set, else NODE_PRIVATE_KEY. */
function shorthandKeys(settings: Settings, neededFor: string): string[] {
  if (settings.NODE_PRIVATE_KEYS && settings.NODE_PRIVATE_KEYS.length > 0)
    return settings.NODE_PRIVATE_KEYS
  if (settings.NODE_PRIVATE_KEY) return [settings.NODE_PRIVATE_KEY]
  throw new SettingsError([
    `NODE_PRIVATE_KEY: required for ${neededFor} (not set): set KEYSTORE_DIR to a folder of keystores (feedrunner keys create), or NODE_PRIVATE_KEY`,
  ])
}

/** Reads and checks CHAINS_FILE; `file` is the path as configured (messages name it so). */
export function readChainsFile(
  file: string,
  settings: Settings,
  env: NodeJS.ProcessEnv = process.env,
): ChainConfig[] {
  const where = `CHAINS_FILE ${file}`
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    throw new SettingsError([`${where}: cannot be read (${(error as NodeJS.ErrnoException).code})`])
  }
  let document: unknown
  try {
    document = parseToml(text)
  } catch (error) {
    // The parser's message quotes the lines around the fault, which may hold a URL with an API key.
    const at = error instanceof TomlError ? ` at line ${error.line}, column ${error.column}` : ''
    const what = (error as Error).message.split('\n')[0]
    throw new SettingsError([`${where}: not valid TOML${at}: ${what}`])
  }
  const parsed = fileSchema.safeParse(document)
  if (!parsed.success)
    throw new SettingsError(parsed.error.issues.map((issue) => issueText(where, issue, document)))
  const problems: string[] = []
  const seen = new Set<number>()
  for (const chain of parsed.data.chains) {
    if (seen.has(chain.chain_id))
      problems.push(`${where}: chain ${chain.chain_id} is declared twice`)
    seen.add(chain.chain_id)
    if (chain.endpoints.every((endpoint) => endpoint.send_only))
      problems.push(
        `${where}: chain ${chain.chain_id}: every endpoint is send_only: reads need one`,
      )
  }
  const chains = parsed.data.chains.map((chain) =>
    toChainConfig(where, chain, settings, env, problems),
  )
  if (problems.length > 0) throw new SettingsError(problems)
  return chains
}

function toChainConfig(
  where: string,
  chain: ChainEntry,
  settings: Settings,
  env: NodeJS.ProcessEnv,
  problems: string[],
): ChainConfig {
  const label = `chain ${chain.chain_id}${chain.name ? ` (${chain.name})` : ''}`
  return {
    chainId: chain.chain_id,
    label,
    endpoints: chain.endpoints.map((endpoint, index) => ({
      url: endpoint.url,
      sendOnly: endpoint.send_only,
      setting: `${where} chain ${chain.chain_id} endpoint ${index + 1}`,
    })),
    keys: chainKeys(`${where}: chain ${chain.chain_id}: keys_env`, chain, settings, env, problems),
    confirmations: chain.confirmations ?? settings.TX_CONFIRMATIONS,
    finalityDepth: chain.finality_depth ?? settings.CHAIN_FINALITY_DEPTH,
    pollIntervalMs: chain.poll_interval_ms ?? settings.CHAIN_POLL_INTERVAL_MS,
    maxLagBlocks: chain.max_lag_blocks,
    minIncomingConfirmations:
      chain.min_incoming_confirmations ?? settings.MIN_INCOMING_CONFIRMATIONS,
    minContractPaymentLinkJuels:
      chain.min_contract_payment_link_juels ?? BigInt(settings.MIN_CONTRACT_PAYMENT_LINK_JUELS),
    forwarder: chain.forwarder_address ?? settings.FORWARDER_ADDRESS,
    gas: {
      limit: chain.gas.limit,
      priorityFeeWei: chain.gas.priority_fee_wei,
      maxFeePerGasCapWei: chain.gas.max_fee_per_gas_cap_wei,
      bumpAfterBlocks: chain.gas.bump_after_blocks,
    },
  }
}

/** The chain's keys from the variables keys_env names; without keys_env, NODE_PRIVATE_KEY(S). */
function chainKeys(
  where: string,
  chain: ChainEntry,
  settings: Settings,
  env: NodeJS.ProcessEnv,
  problems: string[],
): string[] {
  if (!chain.keys_env) {
    try {
      return shorthandKeys(settings, `chain ${chain.chain_id}, which has no keys_env`)
    } catch (error) {
      problems.push(`${where}: ${(error as SettingsError).problems.join('; ')}`)
      return []
    }
  }
  const keys: string[] = []
  for (const name of chain.keys_env) {
    const value = env[name]
    if (value === undefined || value === '') {
      problems.push(`${where}: ${name} is not set`)
      continue
    }
    const key = privateKey.safeParse(value.trim())
    // The value is never repeated: it is (or was meant to be) a key.
    if (!key.success) problems.push(`${where}: ${name} ${keyProblem(key.error.issues[0]?.message)}`)
    else keys.push(key.data)
  }
  return keys
}

function keyProblem(message: string | undefined): string {
  return message?.startsWith('is ') ? message : `is not a private key: ${message ?? 'invalid'}`
}

/**
 * `CHAINS_FILE chains.toml: chain 137: endpoints[2].url: expected ...` (a chain without a usable
 * chain_id is named by its place, `chains[2]`), never the value.
 */
function issueText(where: string, issue: z.core.$ZodIssue, document: unknown): string {
  let path = issue.path
  let chain = ''
  if (path[0] === 'chains' && typeof path[1] === 'number') {
    const id = (document as { chains?: Array<{ chain_id?: unknown }> }).chains?.[path[1]]?.chain_id
    chain = Number.isInteger(id) ? `chain ${String(id)}: ` : `chains[${path[1] + 1}]: `
    path = path.slice(2)
  }
  const field = path
    .map((part) => (typeof part === 'number' ? `[${part + 1}]` : `.${String(part)}`))
    .join('')
    .replace(/^\./, '')
  const what =
    issue.code === 'unrecognized_keys' ? `unknown field ${issue.keys.join(', ')}` : issue.message
  return `${where}: ${chain}${field ? `${field}: ` : ''}${what}`
}

/** An endpoint as messages show it: its setting and host:port (a URL's path may hold an API key). */
export function endpointName(endpoint: EndpointConfig): string {
  return `${endpoint.setting} ${endpointOf(endpoint.url)}`
}
