import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { getAddress, getCreateAddress, Wallet } from 'ethers'
import { describe, expect, it } from 'vitest'
import { summariseJob } from '../../src/pipeline/index.ts'
import {
  DEV_PUSH_ADDRESSES,
  DEV_PUSH_FEEDS,
  PUSH_DEPLOYER_ADDRESS,
  PUSH_DEPLOYER_KEY,
} from '../../src/dev/push-feeds.ts'
import { stackJobsDir } from '../../src/dev/stack.ts'
import { loadJobRegistry } from '../../src/runner/job-registry.ts'
import { runFeedrunner } from '../e2e/support/cli.ts'

const projectRoot = join(import.meta.dirname, '../..')
const pushDir = join(projectRoot, 'jobs/push')

/** The shipped push jobs (jobs/push/) against what the dev stack deploys and the demo checks. */
describe('the push jobs of jobs/push/', () => {
  it('are at the addresses anvil account 9 deploys to first (its nonces 0, 1, 2)', () => {
    expect(new Wallet(PUSH_DEPLOYER_KEY).address).toBe(PUSH_DEPLOYER_ADDRESS)
    const order = ['cron', 'webhook', 'aggregator'] as const
    order.forEach((name, nonce) =>
      expect(DEV_PUSH_ADDRESSES[name]).toBe(
        getCreateAddress({ from: PUSH_DEPLOYER_ADDRESS, nonce }),
      ),
    )
  })

  it('are one spec per declared feed, each writing to its contract the floor of its collection', async () => {
    const files = readdirSync(pushDir).filter((name) => name.endsWith('.toml'))
    expect(files.sort()).toEqual(DEV_PUSH_FEEDS.map((feed) => feed.file).sort())
    const registry = await loadJobRegistry(pushDir, [31337])
    for (const feed of DEV_PUSH_FEEDS) {
      const loaded = registry.jobs.find((job) => job.job.file === join(pushDir, feed.file))!
      expect(loaded.externalJobId, feed.file).toBe(feed.externalJobId)
      const { job } = loaded
      expect(job.spec.type).toBe(feed.type)
      const target =
        job.spec.type === 'fluxmonitor'
          ? job.spec.contractAddress
          : job.tasks.find((task) => task.type === 'ethtx')!.attributes.to
      expect(getAddress(target!), feed.file).toBe(DEV_PUSH_ADDRESSES[feed.contract])
      const summary = summariseJob(job)
      expect(summary.bridge).toBe('datafeed')
      expect(summary.literals.endpoint).toBe('collection-floor-price')
      expect(summary.literals.key).toBe('##signKey')
      // The webhook's collection comes from its call's body (the demo's call names the feed's); the
      // others name theirs.
      expect(summary.literals.collection_contract_address).toBe(
        feed.type === 'webhook' ? '$(collection)' : feed.collection,
      )
      expect(job.tasks.find((task) => task.type === 'multiply')!.attributes.times).toBe('100')
    }
  })

  it('run only where the stack runs them: JOBS_DIR is jobs,jobs/push with pushJobs, jobs without', () => {
    expect(stackJobsDir(true)).toBe(`${join(projectRoot, 'jobs')},${pushDir}`)
    expect(stackJobsDir(false)).toBe(join(projectRoot, 'jobs'))
  })

  it('`jobs validate jobs/push/*.toml` passes', async () => {
    const files = DEV_PUSH_FEEDS.map((feed) => `jobs/push/${feed.file}`)
    const result = await runFeedrunner(['jobs', 'validate', ...files], {}, 60_000, projectRoot)
    expect(result.stdout).toContain('3 of 3 specs valid')
    expect(result.code, result.stderr).toBe(0)
  })
})
