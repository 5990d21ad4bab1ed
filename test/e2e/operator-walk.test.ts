import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Contract, getAddress, JsonRpcProvider, parseEther, Wallet } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { operatorInterface } from '../../src/chain/operator.ts'
import { decryptKeystore, listKeystores, passwordFromFile } from '../../src/config/keystore.ts'
import { SETTINGS } from '../../src/config/settings.ts'
import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from '../../src/dev/anvil.ts'
import { freePort } from '../../src/dev/ports.ts'
import { startOwnedProcess, waitFor, type OwnedProcess } from '../../src/dev/process.ts'
import { dumpKeyspace } from '../support/keyspace.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

// Issue 39, point 8: docs/operating.md's walk "From an empty chain to a fulfilled request", run as
// written (every ```sh block of the section, line by line) against an anvil of its own, chain 4242.
// What the reader fills in (<operator>, <consumer>, <request-id>, keys) comes from what the commands
// printed before, or from anvil's funded accounts; the ports are free ones. Every outcome is read
// from the chain, and the fulfilment must come from the keystore `keys create` made.

const projectRoot = join(import.meta.dirname, '../..')
const bin = join(projectRoot, 'bin/feedrunner.js')
const SECTION = '## From an empty chain to a fulfilled request'

/** The command lines of the section's ```sh blocks, in order. */
function walkLines(): string[] {
  const text = readFileSync(join(projectRoot, 'docs/operating.md'), 'utf8')
  const start = text.indexOf(SECTION)
  expect(start, `docs/operating.md has a section "${SECTION}"`).toBeGreaterThan(-1)
  const end = text.indexOf('\n## ', start + SECTION.length)
  const section = text.slice(start, end < 0 ? undefined : end)
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)]
    .flatMap((block) => block[1]!.split('\n'))
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
}

interface Ran {
  code: number | null
  output: string
}

function runLine(line: string, env: NodeJS.ProcessEnv, cwd: string): Promise<Ran> {
  return new Promise((resolveRun, reject) => {
    const child = spawn('sh', ['-e', '-c', line], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()))
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error(`${line}\nhad not ended after 180 s:\n${output}`))
    }, 180_000)
    child.once('exit', (code) => {
      clearTimeout(timer)
      resolveRun({ code, output })
    })
  })
}

describe('docs/operating.md: from an empty chain to a fulfilled request, on a second anvil', () => {
  let anvil: Anvil
  let provider: JsonRpcProvider
  const dir = mkdtempSync(join(tmpdir(), 'feedrunner-walk-'))
  const background: OwnedProcess[] = []
  const outputs = new Map<string, string>()
  const filled: Record<string, string> = {}
  let nodeAddress = ''
  const prefix = uniquePrefix('walk')

  beforeAll(async () => {
    // A chain of its own that makes blocks as a public chain does (every second): a chain id that is
    // not a dev chain's waits for 3 incoming confirmations, as a Chainlink node does.
    anvil = await startAnvil({ chainId: 4242, blockTime: 1 })
    provider = new JsonRpcProvider(anvil.rpcUrl, 4242, { staticNetwork: true, cacheTimeout: -1 })
  }, 60_000)

  afterAll(async () => {
    for (const process of background.reverse()) await process.stop()
    provider?.destroy()
    await anvil?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('runs every command of the walk as written, each ending well', async () => {
    const [feedsPort, eaPort, metricsPort] = [await freePort(), await freePort(), await freePort()]
    const env: NodeJS.ProcessEnv = { ...process.env }
    for (const name of Object.keys(SETTINGS)) delete env[name]
    for (const name of Object.keys(env)) if (name.startsWith('BRIDGE_')) delete env[name]
    Object.assign(env, {
      REDIS_URL: testRedisUrl(),
      // No dev stack of this checkout takes part; the shipped specs are where the checkout has them.
      DEV_STATE_FILE: join(dir, 'dev.json'),
      JOBS_DIR: join(projectRoot, 'jobs'),
      METRICS_PORT: String(metricsPort),
      EA_PORT: String(eaPort),
      OPERATIONS_PORT: '0',
      CHAIN_POLL_INTERVAL_MS: '200',
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'warn',
    })
    const fill = (line: string): string =>
      line
        .replaceAll('npx feedrunner', `"${process.execPath}" "${bin}"`)
        .replaceAll('http://127.0.0.1:8546', anvil.rpcUrl)
        .replaceAll('127.0.0.1:8090', `127.0.0.1:${feedsPort}`)
        .replaceAll('--port 8090', `--port ${feedsPort}`)
        .replaceAll('http://127.0.0.1:8080', `http://127.0.0.1:${eaPort}`)
        .replaceAll('QUEUE_PREFIX=my-node', `QUEUE_PREFIX=${prefix}`)
        .replaceAll('<owner-key>', ANVIL_PRIVATE_KEYS[0])
        .replaceAll('<requester-key>', ANVIL_PRIVATE_KEYS[2])
        .replaceAll('<feed-key>', 'walk-feed-key-0123456789')
        .replace(/<(operator|consumer|request-id)>/g, (whole, name: string) => {
          expect(filled[name], `${whole} is known by the time ${line} runs`).toBeDefined()
          return filled[name]!
        })

    const lines = walkLines()
    expect(lines.length).toBeGreaterThan(10)
    for (const shown of lines) {
      const line = fill(shown)
      if (line.startsWith('export ')) {
        for (const assignment of line.slice('export '.length).trim().split(/\s+/)) {
          const at = assignment.indexOf('=')
          env[assignment.slice(0, at)] = assignment.slice(at + 1)
        }
        continue
      }
      if (line.endsWith('&')) {
        const server = startOwnedProcess(shown, 'sh', ['-c', `exec ${line.slice(0, -1)}`], {
          cwd: dir,
          env,
          keepOutputChars: Infinity,
          stopGraceMs: 10_000,
        })
        background.push(server)
        const ready = /feeds serve/.test(line) ? /feed service listening/ : /runner watching/
        await waitFor(
          `${shown} to be ready; its output so far:\n${server.output()}`,
          async () => ready.test(server.output()),
          120_000,
          100,
        )
        continue
      }
      const ran = await runLine(line, env, dir)
      expect(ran.code, `${shown}\n--- output:\n${ran.output}`).toBe(0)
      outputs.set(shown.split(' <')[0]!.split(' --')[0]!, ran.output)
      learn(shown, ran.output)
    }
  }, 900_000)

  /** What the reader takes from a command's output for the next ones. */
  function learn(shown: string, output: string): void {
    const row = (name: string) => new RegExp(`^${name}\\s+(0x[0-9a-fA-F]{40})\\s*$`, 'm')
    if (shown.includes('keys create'))
      nodeAddress = /^address (0x[0-9a-fA-F]{40})/m.exec(output)![1]!
    if (shown.includes('operator deploy')) {
      filled.operator = row('Operator').exec(output)?.[1] as string
      filled.consumer = row('FeedConsumer').exec(output)?.[1] as string
    }
    if (shown.includes('feedrunner request'))
      filled['request-id'] = /^(0x[0-9a-f]{64}) {2}/m.exec(output)?.[1] as string
  }

  it('stored the value on chain, fulfilled by the keystore key, and the owner withdrew the payment', async () => {
    const request = [...outputs].find(([line]) => line.includes('feedrunner request'))![1]
    expect(request).toMatch(/^0x[0-9a-f]{64} {2}160 {2}\(\d+ ms\)$/m)
    expect(request).toContain('1 of 1 fulfilled')
    const requestId = filled['request-id']!
    const consumer = new Contract(
      filled.consumer!,
      ['function uint256Value(bytes32) view returns (uint256)'],
      provider,
    )
    expect(await consumer.getFunction('uint256Value')(requestId)).toBe(160n)

    // The fulfilment, found by the Operator's OracleResponse log, was sent by the keystore's key.
    const [response] = await provider.getLogs({
      address: filled.operator,
      topics: [operatorInterface.getEvent('OracleResponse')!.topicHash, requestId],
      fromBlock: 0,
    })
    expect(response).toBeDefined()
    const fulfilment = await provider.getTransaction(response!.transactionHash)
    expect(getAddress(fulfilment!.from)).toBe(getAddress(nodeAddress))

    // The 0.1 LINK the request paid left the Operator for its owner.
    const operator = new Contract(
      filled.operator!,
      [
        'function withdrawable() view returns (uint256)',
        'function getChainlinkToken() view returns (address)',
      ],
      provider,
    )
    expect(await operator.getFunction('withdrawable')()).toBe(0n)
    const link = new Contract(
      (await operator.getFunction('getChainlinkToken')()) as string,
      ['function balanceOf(address) view returns (uint256)'],
      provider,
    )
    expect(await link.getFunction('balanceOf')(new Wallet(ANVIL_PRIVATE_KEYS[0]).address)).toBe(
      parseEther('0.1'),
    )
    const shown = [...outputs].find(([line]) => line.includes('operator show'))![1]
    expect(shown).toMatch(/^withdrawable\s+0\.1 LINK/m)
  })

  it('the runner signed from the keystore: no raw-key warning, and the key is nowhere in its output or in Redis', async () => {
    const start = background.find((process) => process.name.includes('feedrunner start'))!
    expect(start.output()).not.toContain('raw keys')
    expect(start.output()).toContain('runner watching and working on RPC_URL')
    const [keystore] = listKeystores(join(dir, 'keys'))
    const key = decryptKeystore(keystore!.path, passwordFromFile(join(dir, 'keys.password')))
    expect(key.address).toBe(getAddress(nodeAddress))
    const secret = key.privateKey.slice(2)
    expect(start.output()).not.toContain(secret)
    const stored = await dumpKeyspace(testRedisUrl(), prefix)
    expect(stored).toContain(`${prefix}:runner`)
    expect(stored.toLowerCase()).not.toContain(secret.toLowerCase())
  })
})
