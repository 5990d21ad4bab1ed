import { describe, expect, it } from 'vitest'
import type { OracleRequestEvent } from '../../src/chain/operator.ts'
import { dryRunJob, loadJobSpec, type Job } from '../../src/pipeline/index.ts'
import { jobRunVars, recordedRequest } from '../../src/runner/request-payload.ts'
import {
  CHAINLINK_ORACLE_REQUEST_FIELDS,
  CHAINLINK_RUN_VARIABLES,
  everyVariableSpec,
  variableTaskId,
} from '../support/run-variables.ts'

/**
 * The variables Chainlink gives a directrequest run: validate accepts each (or refuses it with the
 * reason), a dry run gives each, and the runner's run and `jobs run --tx` give each the same way.
 * Before, `$(jobRun.meta.oracleRequest.requester)` passed validate and a dry run and failed every
 * live run (`no "oracleRequest" here`). test/e2e/run-variables.test.ts runs the same spec live.
 */
const OPERATOR = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'
const EXTERNAL_JOB_ID = '0eec7e1d-d0d2-476c-a1a8-72dfb6633f46'

function load(text: string): { job?: Job; problems: string[] } {
  const { job, problems } = loadJobSpec(text, 'every-variable.toml')
  return { job, problems: problems.map((problem) => problem.message) }
}

/** An OracleRequest log as the listener decodes it, its addresses in lower case. */
const event: OracleRequestEvent = {
  kind: 'request',
  chainId: 31337,
  operator: OPERATOR,
  blockNumber: 12,
  blockHash: '0x' + 'ab'.repeat(32),
  txHash: '0x' + 'cd'.repeat(32),
  logIndex: 0,
  topics: ['0x' + '11'.repeat(32), '0x' + '22'.repeat(32)],
  logData: '0x' + '33'.repeat(64),
  specId: '0x' + '44'.repeat(32),
  requester: '0x' + '5aaeb6053f3e94c9b9a09f33669435e7ef1beaed'.toLowerCase(),
  requestId: '0x' + 'AB'.repeat(32),
  payment: 10n ** 17n,
  callbackAddr: '0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359',
  callbackFunctionId: '0xABCDEF01',
  cancelExpiration: 1_700_000_300n,
  dataVersion: 2n,
  data: '0xBF6375726C',
}

describe('validate', () => {
  it("accepts every variable Chainlink's directrequest delegate gives", () => {
    const { problems } = load(
      everyVariableSpec({ externalJobID: EXTERNAL_JOB_ID, operator: OPERATOR }),
    )
    expect(problems).toEqual([])
  })

  it('refuses one a run cannot give, naming what a run has', () => {
    const refused = (variable: string) =>
      load(
        everyVariableSpec({
          externalJobID: EXTERNAL_JOB_ID,
          operator: OPERATOR,
          variables: [variable],
        }),
      ).problems.join('\n')
    expect(refused('jobRun.meta.oracleRequest.requster')).toContain(
      "refers to $(jobRun.meta.oracleRequest.requster), but a directrequest run's jobRun.meta holds only oracleRequest (jobRun.meta.oracleRequest.specId, jobRun.meta.oracleRequest.requester,",
    )
    expect(refused('jobRun.meta.body')).toContain('jobRun.meta holds only oracleRequest')
    expect(refused('jobSpec.pipelineSpec')).toContain(
      'a directrequest run has no jobSpec.pipelineSpec',
    )
  })
})

describe('the oracleRequest of a run', () => {
  it("is the same in the runner's run and in `jobs run --tx`, in Chainlink's formats", () => {
    const live = jobRunVars(event)
    expect(recordedRequest(event).jobRun).toEqual(live)
    expect(live.meta).toEqual({
      oracleRequest: {
        specId: event.specId,
        requester: '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
        requestId: '0x' + 'ab'.repeat(32),
        payment: '100000000000000000',
        callbackAddr: '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
        callbackFunctionId: '0xabcdef01',
        cancelExpiration: '1700000300',
        dataVersion: '2',
        data: '0xbf6375726c',
      },
    })
    expect(Object.keys((live.meta as { oracleRequest: object }).oracleRequest)).toEqual([
      ...CHAINLINK_ORACLE_REQUEST_FIELDS,
    ])
  })

  it('is given by a dry run, each variable a value (its block and transaction need a recorded request)', async () => {
    const { job } = load(
      everyVariableSpec({
        externalJobID: EXTERNAL_JOB_ID,
        operator: OPERATOR,
        evmChainID: '31337',
      }),
    )
    const dryRun = await dryRunJob(job!, { params: [['path', 'x']], env: {} })
    const byId = new Map(dryRun.result.tasks.map((task) => [task.id, task]))
    for (const variable of CHAINLINK_RUN_VARIABLES) {
      const task = byId.get(variableTaskId(variable))!
      if (/^jobRun\.(block\w+Root|logBlock\w+|logTxHash)$/.test(variable))
        expect(task.error, variable).toContain('with --tx or --log')
      else expect(task.ok, `${variable}: ${task.error}`).toBe(true)
    }
    expect(byId.get(variableTaskId('jobRun.meta.oracleRequest.requester'))?.value).toBe(
      '0x000000000000000000000000000000000000dEaD',
    )
    expect(byId.get(variableTaskId('jobSpec.evmChainID'))?.value).toBe('31337')
    expect(dryRun.transaction).toBeDefined()
  })

  it("gives a spec without evmChainID its recorded request's chain, else says why it has none", async () => {
    const { job } = load(
      everyVariableSpec({
        externalJobID: EXTERNAL_JOB_ID,
        operator: OPERATOR,
        variables: ['jobSpec.evmChainID'],
      }),
    )
    const recorded = recordedRequest(event)
    const onChain = await dryRunJob(job!, { params: [], env: {}, recorded })
    expect(onChain.result.tasks[0]).toMatchObject({ ok: true, value: '31337' })
    const built = await dryRunJob(job!, { params: [], env: {} })
    expect(built.result.tasks[0]?.error).toContain('the spec names no evmChainID')
  })

  it('reads $( keypath ) with spaces inside as Chainlink does: a dependency, checked at load and given in the run', async () => {
    const spec = (pipeline: string) => `type = "directrequest"
schemaVersion = 1
name = "spaced"
externalJobID = "${EXTERNAL_JOB_ID}"
contractAddress = "${OPERATOR}"
observationSource = """
${pipeline}
"""
`
    // b is written first and reads a only through the variable: it must wait for a.
    const { job } = load(
      spec(`b [type="uppercase" input="$( a )"]
a [type="lowercase" input="X"]`),
    )
    const run = await dryRunJob(job!, { params: [], env: {} })
    expect(run.result.tasks.map((task) => [task.id, task.ok, task.value])).toEqual([
      ['a', true, 'x'],
      ['b', true, 'X'],
    ])
    expect(load(spec(`b [type="uppercase" input="$( nope )"]`)).problems.join('\n')).toContain(
      'nope',
    )
    // In JSON too: the variable stands for its value, and the run gives it.
    const encode = spec(`n [type="multiply" input="2" times="3"]
e [type="ethabiencode" abi="f(uint256 v)" data="{\\\\"v\\\\": $( n )}"]`)
    expect(load(encode).problems).toEqual([])
    const encoded = await dryRunJob(load(encode).job!, { params: [], env: {} })
    expect(encoded.result.tasks[1]).toMatchObject({ id: 'e', ok: true })
    expect(String(encoded.result.tasks[1]!.value).endsWith('6')).toBe(true)
  })
})
