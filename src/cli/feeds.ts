import { Command, InvalidArgumentError } from 'commander'
import { rootCauseFirst } from '../config/errors.ts'
import { announce } from './announce.ts'
import { onStopSignal, settingsOrExit } from './lifecycle.ts'
import { createFaultInjector, parseFaultSpec, type FaultSpec } from '../feeds/server/faults.ts'

function list(value: string): string[] {
  return value
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)
}

function addressList(value: string): string[] {
  const addresses = list(value)
  for (const address of addresses) {
    if (!/^0x[0-9a-fA-F]{40}$/.test(address))
      throw new InvalidArgumentError(
        `expected node addresses (0x and 40 hex digits), got ${JSON.stringify(address)}`,
      )
  }
  return addresses
}

function chainPair(value: string, previous: Record<string, string>): Record<string, string> {
  const match = /^([A-Za-z0-9][A-Za-z0-9_-]*)=((https?|wss?):\/\/.+)$/.exec(value)
  if (!match)
    throw new InvalidArgumentError(
      `expected id=url, e.g. local=http://127.0.0.1:8545 (got ${JSON.stringify(value)})`,
    )
  return { ...previous, [match[1]!]: match[2]! }
}

function faultSpec(value: string): FaultSpec {
  try {
    return parseFaultSpec(value)
  } catch (error) {
    throw new InvalidArgumentError(error instanceof Error ? error.message : String(error))
  }
}

function port(value: string): number {
  const number = Number(value)
  if (!Number.isInteger(number) || number < 0 || number > 65_535)
    throw new InvalidArgumentError('expected a port number 0-65535')
  return number
}

interface ServeOptions {
  port: number
  host: string
  keys?: string[]
  signers?: string[]
  chain: Record<string, string>
  faults?: FaultSpec
}

async function serve(options: ServeOptions): Promise<void> {
  const settings = settingsOrExit()
  const keys = options.keys ?? settings.FEEDS_SERVER_KEYS ?? []
  const signers = options.signers ?? settings.FEEDS_SERVER_SIGNERS ?? []
  if (keys.length === 0 && signers.length === 0) {
    // An error thrown from an action would end in a stack trace: one line says all there is.
    console.error(
      'feedrunner feeds serve: no key is accepted: give keys with --keys k1,k2 (or FEEDS_SERVER_KEYS), and/or node addresses with --signers 0x...',
    )
    process.exit(1)
  }
  // Fault mode (reliability tests): a seeded share of calls answered wrongly on purpose.
  const faults = options.faults ? createFaultInjector(options.faults) : undefined
  // The feed service and the logger load when it serves, not when another command starts.
  const { createFeedServer } = await import('../feeds/server/index.ts')
  const server = createFeedServer({
    keys,
    signers,
    chains: options.chain,
    host: options.host,
    ...(faults ? { intercept: faults.intercept } : {}),
  })
  const logger = (await import('./service-log.ts')).serviceLogger(settings, 'feedrunner-feeds')
  const url = await server.listen(options.port).catch((error: unknown) => {
    // One line with the remedy, as `start` says it for EA_PORT; Node's own words were a stack trace.
    console.error(
      `feedrunner feeds serve could not start: ${
        (error as NodeJS.ErrnoException).code === 'EADDRINUSE'
          ? `--port ${options.port} is in use on ${options.host} (another process listens there): give --port a free port (0 picks one)`
          : rootCauseFirst(error)
      }`,
    )
    process.exit(1)
  })
  // Never print the keys: only how many there are.
  announce(
    logger,
    { url, keys: keys.length, signers: signers.length },
    `feed service listening on ${url} (${keys.length} key(s), ${signers.length} signer(s), chains: ${Object.keys(options.chain).join(', ') || 'none'} + ethereum-mainnet recorded)${faults ? ` with faults ${JSON.stringify(faults.spec)}` : ''}`,
  )
  onStopSignal(() => {
    if (faults)
      announce(
        logger,
        { faults: faults.stats() },
        `faults injected: ${JSON.stringify(faults.stats())}`,
      )
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    )
  })
}

export function register(program: Command): void {
  const feeds = program.command('feeds').description('The Data Feed Query Service')
  feeds
    .command('serve')
    .description('Run the local Data Feed Query Service (every family on one port)')
    .option('--port <port>', 'port to listen on (0 = any free port)', port, 8090)
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--keys <keys>', 'accepted keys, comma separated (default: FEEDS_SERVER_KEYS)', list)
    .option(
      '--signers <addresses>',
      'node addresses whose signed keys are accepted (default: FEEDS_SERVER_SIGNERS)',
      addressList,
    )
    .option(
      '--chain <id=url>',
      'a blockchain id and its JSON-RPC URL; repeat for more chains',
      chainPair,
      {},
    )
    .option(
      '--faults <spec>',
      'fault mode: rates and seed, e.g. 500=0.1,timeout=0.05,truncated=0.05,shape=0.05,slow=0.05,seed=42',
      faultSpec,
    )
    .action(serve)
  feeds
    .command('docs')
    .description(
      'Print the Feeds section of docs/feeds.md, generated from the catalog (--write updates the page)',
    )
    .option('--write [file]', 'rewrite the section between the feeds markers of this page', false)
    .action(async (options: { write: string | boolean }) => {
      const { FEEDS_PAGE, feedsReadmeSection, writeFeedsSection } = await import('../feeds/docs.ts')
      if (options.write === false) return console.log(feedsReadmeSection())
      const file = typeof options.write === 'string' ? options.write : FEEDS_PAGE
      console.log(
        writeFeedsSection(file) ? `updated the Feeds section of ${file}` : `${file} is up to date`,
      )
    })
}
