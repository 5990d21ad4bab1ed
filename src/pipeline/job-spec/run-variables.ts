import { BLOCK_ROOT_VARIABLES } from '../vars.ts'

/**
 * The variables a directrequest run has, as Chainlink's directrequest delegate gives them (and the
 * runner, `jobs run` and `jobs run --tx` alike), checked when a spec is loaded: a variable a run
 * cannot give is refused there, not found missing by every live run. `jobSpec.contractAddress` and
 * `jobSpec.gasLimit` are feedrunner's; Chainlink's `jobSpec.pipelineSpec` (a Go struct the node's
 * ethtx reads) is not given and is refused by name.
 */
export const RUN_VARIABLES: Readonly<Record<string, readonly string[]>> = {
  jobSpec: ['databaseID', 'name', 'externalJobID', 'contractAddress', 'evmChainID', 'gasLimit'],
  jobRun: [
    'logData',
    'logTopics',
    'logAddress',
    'logBlockHash',
    'logBlockNumber',
    'logTxHash',
    'meta',
    ...BLOCK_ROOT_VARIABLES,
  ],
}

/** `jobRun.meta.oracleRequest`'s fields, as the node's oracleRequestToMap names them. */
export const ORACLE_REQUEST_FIELDS = [
  'specId',
  'requester',
  'requestId',
  'payment',
  'callbackAddr',
  'callbackFunctionId',
  'cancelExpiration',
  'dataVersion',
  'data',
] as const

/**
 * Why a run has no variable at `keypath` (rooted at jobSpec or jobRun), or undefined when it has.
 * Below `jobRun.meta` only `oracleRequest` and its fields are known.
 */
export function runVariableProblem(keypath: string): string | undefined {
  const [root = '', member = '', ...rest] = keypath.split('.')
  const known = RUN_VARIABLES[root] ?? []
  if (!known.includes(member))
    return `a directrequest run has no ${root}.${member} (it has ${known.map((key) => `${root}.${key}`).join(', ')})`
  if (root !== 'jobRun' || member !== 'meta' || rest.length === 0) return undefined
  const [group, field, ...deeper] = rest
  const fields = ORACLE_REQUEST_FIELDS.map((name) => `jobRun.meta.oracleRequest.${name}`)
  if (group !== 'oracleRequest' || (field !== undefined && !includes(field)) || deeper.length > 0)
    return `a directrequest run's jobRun.meta holds only oracleRequest (${fields.join(', ')})`
  return undefined
}

function includes(field: string): boolean {
  return (ORACLE_REQUEST_FIELDS as readonly string[]).includes(field)
}
