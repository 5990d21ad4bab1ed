import { computeAddress, type Provider } from 'ethers'
import { unauthorisedSenders } from '../chain/operator.ts'
import type { JobRegistry } from './job-registry.ts'

/**
 * Every sender key must be an authorised sender of every Operator the job specs name: a request's key
 * is picked by a hash of its run, whatever its Operator, and a fulfilment from a key the Operator does
 * not know reverts with "Not authorized sender" after paying for its gas. Checked once when the runner
 * starts, so a misconfigured key or `contractAddress` stops it with what to do, instead of every run
 * erroring on chain. Keys are named by their index and address, never by themselves.
 */
export async function checkSendersAuthorised(
  provider: Provider,
  registry: JobRegistry,
  keys: readonly string[],
): Promise<void> {
  const addresses = keys.map((key) => computeAddress(key))
  const problems: string[] = []
  for (const operator of registry.operators()) {
    const jobs = registry.jobs
      .filter(
        (loaded) =>
          loaded.job.spec.type === 'directrequest' && loaded.job.spec.contractAddress === operator,
      )
      .map((loaded) => loaded.name)
    const missing = await unauthorisedSenders(provider, operator, addresses).catch(
      (error: unknown) => {
        throw new Error(
          `${error instanceof Error ? error.message : String(error)} (the contractAddress of jobs: ${jobs.join(', ')})`,
        )
      },
    )
    if (missing.length === 0) continue
    const named = missing
      .map((address) => `key ${addresses.indexOf(address)} (${address})`)
      .join(', ')
    problems.push(`${named} not authorised by the Operator ${operator} (jobs: ${jobs.join(', ')})`)
  }
  if (problems.length === 0) return
  throw new Error(
    `sender ${problems.join('; ')}. Their fulfilments would revert with "Not authorized sender": the Operator's owner adds them ` +
      'with feedrunner operator authorize (setAuthorizedSenders), or leave them out of the keys (counted from 0).',
  )
}
