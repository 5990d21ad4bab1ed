import { getVar } from '../vars.ts'
import { TaskError, type TaskRun } from '../task.ts'
import { describe } from './convert.ts'

/**
 * The ethtx, ethcall and estimategaslimit tasks' `evmChainID`: a job runs on its own chain (the
 * runner's), so a task naming another chain is refused rather than sent where it does not say.
 */
export function checkChainId(task: TaskRun): void {
  const named = task.value('evmChainID')
  if (named === undefined || named === '') return
  const text = String(named).trim()
  if (!/^\d+$/.test(text))
    throw new TaskError(`evmChainID must be a chain id, got ${describe(named)}`)
  let runChain: unknown
  try {
    runChain = getVar(task.vars, 'jobSpec.evmChainID')
  } catch {
    return
  }
  if (runChain === undefined || runChain === null || String(runChain) === text) return
  throw new TaskError(
    `evmChainID ${text}: this job runs on chain ${String(runChain)}, and a task's transactions and calls go to the job's chain only (one runner per chain): remove evmChainID or make it ${String(runChain)}`,
    { kind: 'config' },
  )
}

/** A `block` attribute: latest (default), pending, or a block number. */
export function blockTag(task: TaskRun, name = 'block'): bigint | 'latest' | 'pending' {
  const value = task.value(name)
  // Read as its text, trimmed as the load check reads a literal (literals.ts, kind 'block'): a
  // negative number from a variable, which ethers would count back from the head, is refused.
  const text = value === undefined ? '' : String(value).trim()
  if (text === '' || text === 'latest') return 'latest'
  if (text === 'pending') return 'pending'
  if (/^\d+$/.test(text)) return BigInt(text)
  throw new TaskError(`${name} must be latest, pending or a block number, got ${describe(value)}`)
}
