import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Contract, ContractFactory, parseEther, toUtf8Bytes, type InterfaceAbi } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { artifact } from '../../src/chain/artifacts.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { createLogger } from '../../src/config/logger.ts'
import { DEV_OPERATOR_ADDRESS } from '../../src/dev/deploy.ts'
import { waitFor } from '../../src/dev/process.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import type { LoadedJob } from '../../src/runner/job-registry.ts'
import { sendJson, startTestServer, type TestServer } from '../pipeline/support/http-server.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import { runFeedrunner } from './support/cli.ts'

// Chainlink's published "Get > Uint256" spec (test/e2e/specs), as an operator adapts it: the dev
// Operator for YOUR_OPERATOR_CONTRACT_ADDRESS, the dev chain for Sepolia; externalJobID stays commented out.
const published = readFileSync(
  join(import.meta.dirname, 'specs/chainlink-get-uint256.toml'),
  'utf8',
)
const adapted = published
  .replaceAll('YOUR_OPERATOR_CONTRACT_ADDRESS', DEV_OPERATOR_ADDRESS)
  .replace('evmChainID = "11155111"', 'evmChainID = "31337"')
// An older tutorial's copy: no evmChainID at all.
const withoutChain = adapted
  .replace(/^# evmChainID for Sepolia Testnet\n/m, '')
  .replace(/^evmChainID = .*\n/m, '')
  .replace('name = "Get > Uint256 - (TOML)"', 'name = "Get > Uint256 without evmChainID"')

const VOLUME = 123456.789
const VOLUME_TIMES_1E18 = 123_456_789_000_000_000_000_000n
const PATH = '/data/pricemultifull?fsyms=ETH&tsyms=USD'

/** The jobId a consumer passes to ChainlinkClient: the id without hyphens, 32 ASCII characters as bytes. */
function jobIdBytes32(externalJobId: string): Uint8Array {
  return toUtf8Bytes(externalJobId.replaceAll('-', ''))
}

// Each test spawns feedrunner commands (a few seconds each on two loaded cores): the bound only catches a hang.
describe(
  "Chainlink's published Get > Uint256 spec on the dev chain, with a plain ChainlinkClient consumer",
  { timeout: 240_000 },
  () => {
    const jobsDir = mkdtempSync(join(tmpdir(), 'feedrunner-published-'))
    const specFile = join(jobsDir, 'get-uint256.toml')
    const noChainFile = join(jobsDir, 'get-uint256-any-chain.toml')
    const logLines: string[] = []
    let api: TestServer
    let stack: DevStack
    let cliEnv: NodeJS.ProcessEnv

    beforeAll(async () => {
      writeFileSync(specFile, adapted)
      writeFileSync(noChainFile, withoutChain)
      api = await startTestServer((request, response) =>
        request.url === PATH
          ? sendJson(response, 200, { RAW: { ETH: { USD: { VOLUME24HOUR: VOLUME } } } })
          : sendJson(response, 404, { error: `no ${request.url}` }),
      )
      const env = {
        ...process.env,
        REDIS_URL: testRedisUrl(),
        JOBS_DIR: jobsDir,
        LOG_LEVEL: 'warn',
        EA_PORT: '',
      }
      stack = await startDevStack({
        env,
        prefix: uniquePrefix('published'),
        logger: createLogger(parseSettings(env), 'published-test', {
          write: (line: string) => void logLines.push(line),
        }),
      })
      cliEnv = {
        REDIS_URL: stack.redisUrl,
        QUEUE_PREFIX: stack.env.QUEUE_PREFIX,
        RPC_URL: stack.rpcUrl,
      }
    })

    afterAll(async () => {
      await stack?.stop()
      await api?.close()
    })

    function job(file: string): LoadedJob {
      const loaded = stack.runner!.registry.jobs.find((candidate) => candidate.job.file === file)
      expect(loaded, `the runner serves ${file}`).toBeDefined()
      return loaded!
    }

    /** Deploys a Chainlink-guide consumer for the job, funded with 1 LINK, and makes one request. */
    async function requestThroughApiConsumer(
      loaded: LoadedJob,
    ): Promise<{ consumer: Contract; requestId: string; txHash: string }> {
      const { abi, bytecode } = artifact(stack.contracts.artifacts, 'APIConsumer')
      const factory = new ContractFactory(abi as InterfaceAbi, bytecode, stack.contracts.deployer)
      const deployed = await factory.deploy(
        stack.contracts.addresses.linkToken,
        stack.contracts.addresses.operator,
        jobIdBytes32(loaded.externalJobId),
        parseEther('0.1'),
      )
      await deployed.waitForDeployment()
      const consumer = new Contract(
        await deployed.getAddress(),
        abi as InterfaceAbi,
        stack.contracts.deployer,
      )
      await (
        await stack.contracts.linkToken.getFunction('transfer')(
          await consumer.getAddress(),
          parseEther('1'),
        )
      ).wait()
      const tx = await consumer.getFunction('requestVolumeData')(`${api.url}${PATH}`)
      const receipt = await tx.wait()
      const event = receipt!.logs
        .map((log: { topics: string[]; data: string }) => consumer.interface.parseLog(log))
        .find((parsed: { name: string } | null) => parsed?.name === 'ChainlinkRequested')
      return { consumer, requestId: event!.args[0] as string, txHash: receipt!.hash }
    }

    async function fulfilledValue(consumer: Contract, requestId: string): Promise<bigint> {
      await waitFor(
        `request ${requestId} to be fulfilled`,
        async () => (await stack.runner!.runs.get(requestId))?.state === 'fulfilled',
        60_000,
      )
      return (await consumer.getFunction('volume')()) as bigint
    }

    it('validates: `jobs validate` prints the derived externalJobID', async () => {
      const result = await runFeedrunner(['jobs', 'validate', specFile], cliEnv)
      expect(result.stderr).toBe('')
      expect(result.code).toBe(0)
      expect(result.stdout).toContain(
        `ok ${specFile}: directrequest job Get > Uint256 - (TOML), externalJobID ${job(specFile).externalJobId} (derived from the name and file name), chain 31337, 8 tasks`,
      )
    })

    it("dry-runs: `jobs run` with the guide's parameters prints the value and the fulfilment calldata", async () => {
      const result = await runFeedrunner(
        [
          'jobs',
          'run',
          specFile,
          '--param',
          `get=${api.url}${PATH}`,
          '--param',
          'path=RAW,ETH,USD,VOLUME24HOUR',
          '--param',
          'times=1000000000000000000',
        ],
        cliEnv,
      )
      expect(result.stderr).toBe('')
      expect(result.code).toBe(0)
      expect(result.stdout).toContain(`value: ${VOLUME_TIMES_1E18} (uint256)`)
      expect(result.stdout).toMatch(
        new RegExp(`calldata to ${DEV_OPERATOR_ADDRESS} .*:\\n0x[0-9a-f]+\\n`),
      )
    })

    it('fulfils the consumer on chain: the value it stores is read from the chain', async () => {
      const { consumer, requestId } = await requestThroughApiConsumer(job(specFile))
      expect(await fulfilledValue(consumer, requestId)).toBe(VOLUME_TIMES_1E18)
    })

    it('a copy without evmChainID runs on the dev chain, after one notice naming the spec and the chain', async () => {
      const notices = logLines.filter((line) => line.includes('has no evmChainID'))
      expect(notices).toHaveLength(1)
      expect(notices[0]).toContain(
        `${noChainFile}: job \\"Get > Uint256 without evmChainID\\" has no evmChainID: it runs on chain 31337, the one chain this runner serves`,
      )
      const { consumer, requestId } = await requestThroughApiConsumer(job(noChainFile))
      expect(await fulfilledValue(consumer, requestId)).toBe(VOLUME_TIMES_1E18)
    })

    it('`jobs run --tx` reads a real request from the chain and prints every task and the calldata, sending nothing', async () => {
      const loaded = job(specFile)
      const { consumer, requestId, txHash } = await requestThroughApiConsumer(loaded)
      await fulfilledValue(consumer, requestId)
      const blockBefore = await stack.contracts.provider.getBlockNumber()
      const result = await runFeedrunner(['jobs', 'run', specFile, '--tx', txHash], cliEnv)
      expect(result.stderr).toBe('')
      expect(result.code).toBe(0)
      expect(result.stdout).toContain(`request ${requestId} (tx ${txHash}`)
      expect(result.stdout).not.toContain('note: the request names spec id')
      const tasks = result.stdout
        .split('\n')
        .filter((line) => line.startsWith('ok '))
        .map((line) => line.split(/\s+/)[1])
      expect(tasks).toEqual([
        'decode_log',
        'decode_cbor',
        'fetch',
        'parse',
        'multiply',
        'encode_data',
        'encode_tx',
        'submit_tx',
      ])
      expect(result.stdout).toContain(
        `fulfillOracleRequest2 requestId ${requestId} callback ${await consumer.getAddress()}`,
      )
      // The same request by its log position; and nothing was sent: no new block on the automining chain.
      const receipt = await stack.contracts.provider.getTransactionReceipt(txHash)
      const log = receipt!.logs.find((candidate) => candidate.address === DEV_OPERATOR_ADDRESS)!
      const byLog = await runFeedrunner(
        ['jobs', 'run', specFile, '--log', `${log.blockHash}:${log.index}`, '--json'],
        cliEnv,
      )
      expect(byLog.code).toBe(0)
      expect(JSON.parse(byLog.stdout.slice(byLog.stdout.indexOf('{')))).toMatchObject({
        requestId,
        value: String(VOLUME_TIMES_1E18),
        to: DEV_OPERATOR_ADDRESS,
      })
      expect(await stack.contracts.provider.getBlockNumber()).toBe(blockBefore)
    })

    it('`jobs run --tx` of a transaction without a request says so', async () => {
      const tx = await stack.contracts.linkToken.getFunction('transfer')(
        stack.contracts.addresses.deployer,
        1n,
      )
      await tx.wait()
      const result = await runFeedrunner(['jobs', 'run', specFile, '--tx', tx.hash], cliEnv)
      expect(result.code).toBe(1)
      expect(result.stderr).toContain(
        `transaction ${tx.hash} has no OracleRequest log on chain 31337`,
      )
    })
  },
)
