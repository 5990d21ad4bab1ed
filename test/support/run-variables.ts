/**
 * Every variable Chainlink's directrequest delegate gives a run (core/services/directrequest/
 * delegate.go, handleOracleRequest, and its oracleRequestToMap), written out here rather than taken
 * from feedrunner's own list, so a test compares against Chainlink and not against itself.
 */
export const CHAINLINK_ORACLE_REQUEST_FIELDS = [
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

export const CHAINLINK_RUN_VARIABLES = [
  'jobSpec.databaseID',
  'jobSpec.externalJobID',
  'jobSpec.name',
  'jobSpec.evmChainID',
  'jobRun.meta',
  'jobRun.meta.oracleRequest',
  ...CHAINLINK_ORACLE_REQUEST_FIELDS.map((field) => `jobRun.meta.oracleRequest.${field}`),
  'jobRun.logBlockHash',
  'jobRun.logBlockNumber',
  'jobRun.logTxHash',
  'jobRun.logAddress',
  'jobRun.logTopics',
  'jobRun.logData',
  'jobRun.blockReceiptsRoot',
  'jobRun.blockTransactionsRoot',
  'jobRun.blockStateRoot',
] as const

/** Chainlink gives it, feedrunner refuses it at validate: the node's Go struct for its own ethtx. */
export const REFUSED_RUN_VARIABLES = ['jobSpec.pipelineSpec'] as const

/** A task id for reading `variable` (`v_jobRun_meta_oracleRequest_requester`). */
export function variableTaskId(variable: string): string {
  return `v_${variable.replace(/\./g, '_')}`
}

/**
 * An observationSource with one memo task per variable, and a fulfilment built from
 * `jobRun.meta.oracleRequest` alone (the value: its dataVersion), sent to `operator`.
 */
export function everyVariableSource(
  operator: string,
  variables: readonly string[] = CHAINLINK_RUN_VARIABLES,
): string {
  const reads = variables.map(
    (variable) => `    ${variableTaskId(variable)} [type="memo" value="$(${variable})"]`,
  )
  const request = (field: string) => `$(jobRun.meta.oracleRequest.${field})`
  return [
    ...reads,
    `    encode_data [type="ethabiencode" abi="(bytes32 requestId, uint256 value)" data="{\\\\"requestId\\\\": ${request('requestId')}, \\\\"value\\\\": ${request('dataVersion')}}"]`,
    `    encode_tx [type="ethabiencode" abi="fulfillOracleRequest2(bytes32 requestId, uint256 payment, address callbackAddress, bytes4 callbackFunctionId, uint256 expiration, bytes data)" data="{\\\\"requestId\\\\": ${request('requestId')}, \\\\"payment\\\\": ${request('payment')}, \\\\"callbackAddress\\\\": ${request('callbackAddr')}, \\\\"callbackFunctionId\\\\": ${request('callbackFunctionId')}, \\\\"expiration\\\\": ${request('cancelExpiration')}, \\\\"data\\\\": $(encode_data)}"]`,
    `    submit_tx [type="ethtx" to="${operator}" data="$(encode_tx)"]`,
    '    encode_data -> encode_tx -> submit_tx',
  ].join('\n')
}

/** A whole directrequest spec reading every variable (see everyVariableSource). */
export function everyVariableSpec(options: {
  externalJobID: string
  operator: string
  evmChainID?: string
  variables?: readonly string[]
}): string {
  return [
    'type = "directrequest"',
    'schemaVersion = 1',
    'name = "every variable"',
    `externalJobID = "${options.externalJobID}"`,
    `contractAddress = "${options.operator}"`,
    ...(options.evmChainID === undefined ? [] : [`evmChainID = "${options.evmChainID}"`]),
    'observationSource = """',
    everyVariableSource(options.operator, options.variables),
    '"""',
  ].join('\n')
}
