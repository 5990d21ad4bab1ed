import type { JobChainDefaults } from '../config/chains.ts'
import type { Job } from '../pipeline/index.ts'

/**
 * Why a job cannot run on its chain as its spec says, before any request arrives: forwardingAllowed
 * on a chain without a forwarder, or an ethtx `from` that leaves out sender keys (the runner picks
 * the key per run, so `from` holds only when it lists them all). Empty when it can.
 */
export function chainFitProblems(
  job: Job,
  chain: Pick<JobChainDefaults, 'forwarder' | 'senders'>,
): { task?: string; message: string }[] {
  const problems: { task?: string; message: string }[] = []
  if (job.spec.forwardingAllowed && !chain.forwarder)
    problems.push({
      message:
        'forwardingAllowed = true, and this chain has no forwarder: its fulfilments would go from the sender keys directly. Set FORWARDER_ADDRESS (CHAINS_FILE: forwarder_address) to an AuthorizedForwarder that authorises the sender keys and that the Operator authorises, or remove forwardingAllowed',
    })
  for (const task of job.tasks) {
    if (task.type !== 'ethtx' || chain.senders === undefined) continue
    const listed = literalAddresses(task.attributes.from)
    if (!listed) continue
    const missing = chain.senders.filter((address) => !listed.has(address.toLowerCase()))
    if (missing.length > 0)
      problems.push({
        task: task.id,
        message: `from leaves out sender key address(es) ${missing.join(', ')}: this runner sends each run from any of its keys, so from must list them all (or be removed)`,
      })
  }
  return problems
}

function literalAddresses(text: string | undefined): Set<string> | undefined {
  if (text === undefined || text.includes('$(')) return undefined
  try {
    const list = JSON.parse(text) as unknown
    return Array.isArray(list) ? new Set(list.map((item) => String(item).toLowerCase())) : undefined
  } catch {
    return undefined
  }
}
