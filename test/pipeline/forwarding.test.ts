import { computeAddress } from 'ethers'
import { describe, expect, it } from 'vitest'
import { RecordingChainAccess } from '../../src/pipeline/index.ts'
import { forwardCalldata, unforwarded } from '../../src/pipeline/forwarding.ts'
import { chainFitProblems } from '../../src/runner/chain-fit.ts'
import { loadJobSpec, type Job } from '../../src/pipeline/index.ts'
import { runTask } from './support/task.ts'

// forwardingAllowed and ethtx `from`: a spec never runs differently than it says. With a forwarder the
// fulfilment goes through Chainlink's AuthorizedForwarder; without one the spec is refused.

const OPERATOR = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'
const FORWARDER = '0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9'
const KEY_A = computeAddress('0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d')
const KEY_B = computeAddress('0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a')

function job(extra: string, ethtx: string): Job {
  const { job, problems } = loadJobSpec(
    [
      'type = "directrequest"',
      'schemaVersion = 1',
      'name = "fwd"',
      `contractAddress = "${OPERATOR}"`,
      extra,
      'observationSource = """',
      `submit [type=ethtx to="${OPERATOR}" data="0x1234" ${ethtx}]`,
      '"""',
    ].join('\n'),
    'fwd.toml',
  )
  if (!job) throw new Error(problems.map((problem) => problem.message).join('\n'))
  return job
}

describe('forwardingAllowed', () => {
  it('sends forward(operator, calldata) to the chain forwarder', async () => {
    const chain = new RecordingChainAccess()
    const outcome = await runTask(
      'ethtx',
      { to: OPERATOR, data: '0x1234' },
      { context: { chain, forwardingAllowed: true, forwarder: FORWARDER } },
    )
    expect(chain.transactions[0]).toMatchObject({
      to: FORWARDER,
      data: forwardCalldata(OPERATOR, '0x1234'),
    })
    expect(unforwarded(chain.transactions[0]!.data)).toEqual({ to: OPERATOR, data: '0x1234' })
    expect(outcome).toMatchObject({ status: 'recorded', forwarder: FORWARDER })
  })

  it('without a forwarder the task fails, naming the setting; the runner refuses the spec at start', async () => {
    const error = await runTask(
      'ethtx',
      { to: OPERATOR, data: '0x1234' },
      { context: { chain: new RecordingChainAccess(), forwardingAllowed: true } },
    ).catch((caught: Error) => caught)
    expect((error as Error).message).toContain('set FORWARDER_ADDRESS')
    expect(chainFitProblems(job('forwardingAllowed = true', ''), { senders: [KEY_A] })).toEqual([
      {
        message: expect.stringContaining(
          'forwardingAllowed = true, and this chain has no forwarder',
        ),
      },
    ])
    expect(chainFitProblems(job('forwardingAllowed = true', ''), { forwarder: FORWARDER })).toEqual(
      [],
    )
  })

  it('a job without forwardingAllowed sends to the Operator directly, forwarder or not', async () => {
    const chain = new RecordingChainAccess()
    await runTask(
      'ethtx',
      { to: OPERATOR, data: '0x1234' },
      { context: { chain, forwarder: FORWARDER } },
    )
    expect(chain.transactions[0]).toMatchObject({ to: OPERATOR, data: '0x1234' })
  })
})

describe('ethtx from', () => {
  const from = (addresses: string[]) => JSON.stringify(addresses)
  it('holds when it lists every sender key (the runner picks one per run)', async () => {
    const chain = new RecordingChainAccess()
    await runTask(
      'ethtx',
      { to: OPERATOR, data: '0x12', from: from([KEY_A, KEY_B]) },
      { context: { chain, senders: [KEY_A, KEY_B] } },
    )
    expect(chain.transactions).toHaveLength(1)
    expect(
      chainFitProblems(job('', `from=<${from([KEY_B, KEY_A])}>`), { senders: [KEY_A, KEY_B] }),
    ).toEqual([])
  })
  it('leaving a key out is refused at start and at run time, naming the key', async () => {
    expect(
      chainFitProblems(job('', `from=<${from([KEY_A])}>`), { senders: [KEY_A, KEY_B] }),
    ).toEqual([
      {
        task: 'submit',
        message: expect.stringContaining(`from leaves out sender key address(es) ${KEY_B}`),
      },
    ])
    const chain = new RecordingChainAccess()
    const error = await runTask(
      'ethtx',
      { to: OPERATOR, data: '0x12', from: from([KEY_A]) },
      { context: { chain, senders: [KEY_A, KEY_B] } },
    ).catch((caught: Error) => caught)
    expect((error as Error).message).toContain(`add ${KEY_B} to from`)
    expect(chain.transactions).toHaveLength(0)
  })
  it("a placeholder such as the docs' EOA_ADDRESS is refused at load", () => {
    const { problems } = loadJobSpec(
      [
        'type = "directrequest"',
        'schemaVersion = 1',
        'name = "x"',
        `contractAddress = "${OPERATOR}"`,
        'observationSource = """',
        `s [type=ethtx to="${OPERATOR}" from="[\\\\"EOA_ADDRESS\\\\"]"]`,
        '"""',
      ].join('\n'),
      'x.toml',
    )
    expect(problems.map((problem) => problem.message)).toEqual([
      'from must be a JSON list of 0x addresses such as ["0x9fE4...a6e0"], got "[\\"EOA_ADDRESS\\"]"',
    ])
  })
})
