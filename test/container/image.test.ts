// The container lane (issue 24): builds the image and runs every documented command in it as the
// image's user on a read-only root filesystem, beside the tests' loopback Redis. Runs when a Docker
// daemon answers; when none does, one test says so (and why) instead of the lane passing silently.
import { randomBytes } from 'node:crypto'
import { Contract, JsonRpcProvider, Wallet, type InterfaceAbi } from 'ethers'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { artifact, compileContracts } from '../../src/chain/artifacts.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { DEV_CONSUMER_ADDRESS } from '../../src/dev/deploy.ts'
import { freePort } from '../../src/dev/ports.ts'
import { sendConsumerRequests, waitForFulfilments } from '../../src/dev/requests.ts'
import { startDevStack, type DevStack } from '../../src/dev/stack.ts'
import { feedCatalog } from '../../src/feeds/catalog/index.ts'
import { feedJobShape } from '../../src/runner/feed-job.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { postAdapter } from '../adapter/support.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'
import {
  IMAGE_SIZE_BUDGET_MB,
  baseImage,
  docker,
  dockerDaemon,
  dockerOk,
  removeContainer,
  repoRoot,
  startContainer,
  terminate,
  waitForOutput,
  type Container,
} from './docker.ts'

// .ci/run sets this when it has a daemon but could not make a base image in its time bound.
const skipped = process.env.FEEDRUNNER_CONTAINER_LANE_SKIP
const daemon = skipped ? ({ ok: false, reason: skipped } as const) : dockerDaemon()
// A tag of this run's own: two runs on one daemon (engineers' suites, CI) must not run each other's build.
const IMAGE = `feedrunner:test-${randomBytes(4).toString('hex')}`
/** The same build's `dev` target: the production image and anvil. */
const DEV_IMAGE = `${IMAGE}-dev`
/** The README's request: Manchester United's home odds against Fulham (1.6), scaled by 100. */
const GAME_ODDS = {
  endpoint: 'game-odds',
  ...feedCatalog['game-odds'].example,
  path: '$.data.homeMoneyLine',
  times: '100',
  type: 'uint256',
}

if (!daemon.ok) {
  describe('container lane', () => {
    it('is not run here (the reason is printed)', () => {
      console.warn(
        `container lane NOT RUN: ${daemon.reason}. It needs a Docker daemon (Debian: apt-get install docker.io; dockerd &) and a base image (docs/docker.md); .ci/run makes both when it can.`,
      )
      expect(daemon.ok).toBe(false)
    })
  })
} else {
  describe(`the container image (Docker ${daemon.version})`, () => {
    const containers: Container[] = []
    let stack: DevStack | undefined

    const unique = (label: string) => `feedrunner-test-${label}-${randomBytes(4).toString('hex')}`
    async function start(
      label: string,
      args: string[],
      env: Record<string, string> = {},
      image = IMAGE,
    ) {
      const container = await startContainer(image, unique(label), args, env)
      containers.push(container)
      return container
    }
    /**
     * A part started with ports that were free a moment ago, and ready. Another test may take such a
     * port before the part binds it (the part then exits saying it is in use): it is started again
     * on fresh ports, up to three times.
     */
    async function startOnFreePorts(
      label: string,
      args: (port: number) => string[],
      ready: RegExp,
    ): Promise<{ container: Container; env: Record<string, string> }> {
      for (let attempt = 1; ; attempt++) {
        const env = await partEnv(label)
        const container = await start(label, args(await freePort()), env)
        try {
          await waitForOutput(container, ready)
          return { container, env }
        } catch (error) {
          if (attempt >= 3 || !/is in use/.test(await container.logs())) throw error
        }
      }
    }
    /** The image's HEALTHCHECK command, run now rather than on its interval. */
    async function healthcheck(container: Container) {
      return docker(['exec', container.id, 'node', 'bin/healthcheck.js'])
    }
    /** Environment of a production part on the host's dev chain and feed service, its own prefix. */
    async function partEnv(label: string): Promise<Record<string, string>> {
      const [eaPort, metricsPort, operationsPort] = [
        await freePort(),
        await freePort(),
        await freePort(),
      ]
      // JOBS_DIR stays the image's own /app/jobs (the host's path means nothing inside).
      const { JOBS_DIR: _hostJobs, ...hostEnv } = stack!.env
      return {
        ...hostEnv,
        QUEUE_PREFIX: uniquePrefix(`container-${label}`),
        EA_PORT: String(eaPort),
        METRICS_PORT: String(metricsPort),
        OPERATIONS_PORT: String(operationsPort),
        BRIDGE_DATAFEED_URL: `http://127.0.0.1:${eaPort}`,
        LOG_LEVEL: 'warn',
      }
    }

    beforeAll(async () => {
      const base = await baseImage()
      // The default target, then the dev target from the same stages (the cache's, in seconds).
      for (const [tag, target] of [
        [IMAGE, []],
        [DEV_IMAGE, ['--target', 'dev']],
      ] as const) {
        const built = await docker(
          [
            'build',
            '--network',
            'host',
            '--build-arg',
            `BASE_IMAGE=${base}`,
            ...target,
            '-t',
            tag,
            repoRoot,
          ],
          20 * 60_000,
        )
        if (built.code !== 0)
          throw new Error(
            `docker build of ${tag} failed on ${base}:\n${(built.stdout + built.stderr).slice(-4000)}`,
          )
      }
      // A dev chain with the contracts and the local feed service on the host's loopback, for the
      // production commands (`start`, `adapter`, `worker`, `runner`) to work against.
      const prefix = uniquePrefix('container-host')
      stack = await startDevStack({
        env: { ...process.env, REDIS_URL: testRedisUrl(), QUEUE_PREFIX: prefix, LOG_LEVEL: 'warn' },
        prefix,
        runner: false,
      })
    }, 30 * 60_000)

    afterAll(async () => {
      for (const container of containers) await removeContainer(container)
      await stack?.stop()
      // --no-prune keeps the layers: they are the next build's cache.
      await docker(['rmi', '--no-prune', IMAGE, DEV_IMAGE])
    }, 120_000)

    it('is within its size budget, runs as node with a HEALTHCHECK, and ships no sources to compile', async () => {
      const [size, user, health] = (
        await dockerOk([
          'image',
          'inspect',
          '-f',
          '{{.Size}}|{{.Config.User}}|{{json .Config.Healthcheck.Test}}',
          IMAGE,
        ])
      ).split('|')
      const sizeMb = Math.round(Number(size) / 1e6)
      console.log(`container image ${IMAGE}: ${sizeMb} MB (budget ${IMAGE_SIZE_BUDGET_MB} MB)`)
      expect(sizeMb).toBeLessThanOrEqual(IMAGE_SIZE_BUDGET_MB)
      expect(user).toBe('node')
      expect(health).toContain('bin/healthcheck.js')
      const inside = await dockerOk([
        'run',
        '--rm',
        '--read-only',
        '--entrypoint',
        'sh',
        IMAGE,
        '-c',
        'id -u; test -e /app/src && echo src; test -e /app/.env && echo env; test -f /app/dist/BUILD.json && echo dist; ls /app/.cache/contracts | wc -l; ' +
          'for tool in @foundry-rs/anvil @foundry-rs/anvil-linux-amd64 solc-0.8.19 solc-0.6.6 tsx esbuild; do test -e /app/node_modules/$tool && echo $tool; done; true',
      ])
      // uid 1000, no TypeScript sources, no .env, compiled JavaScript, the compiled contracts, and
      // none of the dev dependencies (the dev chain, the Solidity compilers, TypeScript's runner).
      expect(inside.split('\n')).toEqual(['1000', 'dist', expect.stringMatching(/^[1-9]\d*$/)])
      const devSize = await dockerOk(['image', 'inspect', '-f', '{{.Size}}', DEV_IMAGE])
      console.log(
        `container image ${DEV_IMAGE} (the dev target): ${Math.round(Number(devSize) / 1e6)} MB`,
      )
    })

    it('dev in the production image names the dev target, exits 1 and serves nothing', async () => {
      const refused = await docker([
        'run',
        '--rm',
        '--read-only',
        '--tmpfs',
        '/tmp',
        '--network',
        'host',
        '-e',
        `REDIS_URL=${testRedisUrl()}`,
        '-e',
        `QUEUE_PREFIX=${uniquePrefix('container-no-anvil')}`,
        IMAGE,
        'dev',
      ])
      expect(refused.code, refused.stdout + refused.stderr).toBe(1)
      expect(refused.stdout + refused.stderr).toContain('docker build --target dev')
      expect(refused.stdout + refused.stderr).not.toMatch(/^\s+at |Require stack/m)
    })

    it('jobs validate checks the shipped specs and exits 0', async () => {
      const validated = await docker(['run', '--rm', '--read-only', IMAGE, 'jobs', 'validate'])
      expect(validated.stdout).toMatch(/(\d+) of \1 specs valid/)
      expect(validated.code, validated.stderr).toBe(0)
    })

    it('start beside the loopback Redis answers an adapter request with the data set value, is healthy, exits 0 on SIGTERM', async () => {
      const { container, env } = await startOnFreePorts(
        'start',
        () => ['start'],
        /feedrunner runner watching/,
      )
      const answer = await postAdapter(env.BRIDGE_DATAFEED_URL!, GAME_ODDS)
      expect(answer.status, answer.text).toBe(200)
      expect(answer.body.result).toBe('160')
      const health = await healthcheck(container)
      expect(health.stdout).toContain(`${env.BRIDGE_DATAFEED_URL}/live answered 200`)
      expect(health.code).toBe(0)
      expect(await terminate(container), await container.logs()).toBe(0)
    }, 300_000)

    it('adapter, worker, runner and feeds serve each run, are healthy, and exit 0 on SIGTERM', async () => {
      const parts: Array<[string, (port: number) => string[], RegExp]> = [
        ['adapter', () => ['adapter'], /adapter listening/],
        ['worker', () => ['worker'], /health http:.*\/live/],
        ['runner', () => ['runner'], /health http:.*\/live/],
        [
          'feeds',
          (port) => ['feeds', 'serve', '--port', String(port), '--keys', 'container-test'],
          /feed service listening/,
        ],
      ]
      for (const [label, args, ready] of parts) {
        const { container } = await startOnFreePorts(label, args, ready)
        const health = await healthcheck(container)
        expect(health.code, `${label}: ${health.stdout}${health.stderr}`).toBe(0)
        expect(await terminate(container), `${label}:\n${await container.logs()}`).toBe(0)
      }
    }, 600_000)

    it('dev runs the whole stack in the container and fulfils the README request on chain', async () => {
      const eaPort = await freePort()
      const container = await start(
        'dev',
        ['dev'],
        {
          REDIS_URL: testRedisUrl(),
          QUEUE_PREFIX: uniquePrefix('container-dev'),
          EA_PORT: String(eaPort),
          LOG_LEVEL: 'warn',
        },
        DEV_IMAGE,
      )
      const output = await waitForOutput(container, /feedrunner dev ready/, 180_000)
      expect(output).not.toMatch(/EACCES|compiling/)
      const rpcUrl = /chain \(anvil\)\s+(http:\/\/127\.0\.0\.1:\d+)/.exec(output)?.[1]
      expect(rpcUrl, output).toBeDefined()

      const provider = new JsonRpcProvider(rpcUrl, undefined, {
        pollingInterval: 100,
        cacheTimeout: -1,
      })
      try {
        const chainId = Number((await provider.getNetwork()).chainId)
        const job = (await loadJobRegistry(`${repoRoot}/jobs`, chainId)).jobs.find((loaded) =>
          loaded.job.file.endsWith('/game-odds.toml'),
        )!
        const signer = new Wallet(ANVIL_PRIVATE_KEYS[0], provider)
        const abi = artifact(compileContracts(), 'FeedConsumer').abi as InterfaceAbi
        const consumer = new Contract(DEV_CONSUMER_ADDRESS, abi, signer)
        const fromBlock = await provider.getBlockNumber()
        const { endpoint: _endpoint, type: _type, ...params } = GAME_ODDS
        const [sent] = await sendConsumerRequests(consumer, signer, [
          {
            externalJobId: job.externalJobId,
            valueType: feedJobShape(job.job).answerType,
            params: Object.entries(params),
            payment:
              (job.job.spec.type === 'directrequest'
                ? job.job.spec.minContractPaymentLinkJuels
                : undefined) ?? 0n,
          },
        ])
        const fulfilments = await waitForFulfilments(consumer, provider, [sent!.requestId], {
          fromBlock,
          timeoutMs: 120_000,
        })
        expect(fulfilments.get(sent!.requestId)?.value, await container.logs()).toBe(160n)
      } finally {
        provider.destroy()
      }
      expect((await healthcheck(container)).code).toBe(0)
      expect(await terminate(container), await container.logs()).toBe(0)
    }, 600_000)
  })
}
