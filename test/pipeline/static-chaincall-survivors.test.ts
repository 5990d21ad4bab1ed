import { afterAll, describe, expect, it } from 'vitest'
import {
  loadJobSpec,
  RecordingChainAccess,
  runJob,
  TaskIsolation,
  type GasEstimateRequest,
  type Job,
} from '../../src/pipeline/index.ts'
import { DEFAULT_PIPELINE_LIMITS } from '../../src/pipeline/limits.ts'

// The chain-reading tasks (ethcall, estimategaslimit) as a spec author writes them: every attribute
// a Chainlink node reads is taken and reaches the chain, a missing required one and a literal that is
// not what its attribute takes are refused at load naming the attribute, and estimategaslimit stays
// on the pipeline's own thread (where the chain is) when pure tasks go to isolates. The task tests in
// test/pipeline/tasks run a task without the loader, so none of this was seen there.

const CONTRACT = '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512'
const SENDER = '0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9'

/** A directrequest spec on chain 31337 with `observationSource`, and what loading it gives. */
function load(observationSource: string) {
  return loadJobSpec(
    `type = "directrequest"
schemaVersion = 1
name = "chain reads"
externalJobID = "5b0c2f4e-8d1a-4c3b-9e7f-1a2b3c4d5e6f"
contractAddress = "${CONTRACT}"
evmChainID = "31337"
minContractPaymentLinkJuels = "0"
observationSource = """
${observationSource}
"""
`,
    'chain-reads.toml',
  )
}

function loaded(observationSource: string): Job {
  const { job, problems } = load(observationSource)
  expect(problems).toEqual([])
  return job!
}

/** The messages loading a spec of one task `type` with `attributes` gives. */
function problemsOf(type: string, attributes: Record<string, string>): string[] {
  const written = Object.entries(attributes).map(([name, value]) => `${name}="${value}"`)
  const { job, problems } = load(`t [type="${type}" ${written.join(' ')}]`)
  expect(job === undefined).toBe(problems.length > 0)
  return problems.map((problem) => problem.message)
}

/** For each attribute, the messages of a spec where `bad` gives it a value it does not take. */
function refusals(
  type: string,
  valid: Record<string, string>,
  bad: Record<string, string>,
): Record<string, string[]> {
  return Object.fromEntries(
    Object.entries(bad).map(([name, value]) => [
      name,
      problemsOf(type, { ...valid, [name]: value }),
    ]),
  )
}

/** A chain that answers calls with 0x2a and estimates `gas` for every request, recording them. */
function chainEstimating(gas: bigint) {
  const estimates: GasEstimateRequest[] = []
  const chain = new RecordingChainAccess(
    async () => '0x2a',
    async (request) => {
      estimates.push(request)
      return gas
    },
  )
  return { chain, estimates }
}

describe('ethcall as a spec author writes it', () => {
  it("takes every attribute a node's ethcall reads, and sends each to the chain", async () => {
    const job = loaded(`read [type="ethcall" contract="${CONTRACT}" data="0x01" from="${SENDER}"
      gas="21000" block="7" evmChainID="31337" gasPrice="1" gasTipCap="2" gasFeeCap="3"
      gasUnlimited="false" extractRevertReason="true"]`)
    const { chain } = chainEstimating(0n)
    const result = await runJob(job, { chain })
    expect(result.errors).toEqual([])
    expect(result.outputs).toEqual(['0x2a'])
    expect(chain.calls).toEqual([
      {
        to: CONTRACT,
        data: '0x01',
        from: SENDER,
        gasLimit: 21000n,
        blockNumber: 7n,
        gasPrice: 1n,
        maxPriorityFeePerGas: 2n,
        maxFeePerGas: 3n,
      },
    ])
  })

  it('reads gasUnlimited written in lower case, as a node maps attribute names: no gas limit', async () => {
    const job = loaded(`read [type="ethcall" contract="${CONTRACT}" data="0x01" gas="21000"
      gasunlimited="true"]`)
    const { chain } = chainEstimating(0n)
    expect((await runJob(job, { chain })).errors).toEqual([])
    expect(chain.calls[0]!.gasLimit).toBeUndefined()
  })

  it('refuses a spec without a contract to call, naming the attribute', () => {
    expect(problemsOf('ethcall', { data: '0x01' })).toEqual([
      'ethcall needs the attribute contract',
    ])
  })

  it('refuses at load a literal its attribute does not take, naming the attribute', () => {
    const valid = { contract: CONTRACT, data: '0x01' }
    expect(
      refusals('ethcall', valid, {
        contract: '0x12',
        data: '0x1',
        from: 'me',
        gas: '-1',
        evmChainID: 'mainnet',
        gasPrice: '1.5',
        gasTipCap: '2 gwei',
        gasFeeCap: 'lots',
        gasUnlimited: 'yes',
        extractRevertReason: 'maybe',
        block: 'soon',
      }),
    ).toEqual({
      contract: ['contract must be a 0x address of 20 bytes, got "0x12"'],
      data: ['data must be 0x-hex of whole bytes, got "0x1"'],
      from: ['from must be a 0x address of 20 bytes, got "me"'],
      gas: ['gas must be a whole number from 0, got "-1"'],
      evmChainID: ['evmChainID must be a whole number from 0, got "mainnet"'],
      gasPrice: ['gasPrice must be a whole number from 0, got "1.5"'],
      gasTipCap: ['gasTipCap must be a whole number from 0, got "2 gwei"'],
      gasFeeCap: ['gasFeeCap must be a whole number from 0, got "lots"'],
      gasUnlimited: ['gasUnlimited must be true or false, got "yes"'],
      extractRevertReason: ['extractRevertReason must be true or false, got "maybe"'],
      block: ['block must be latest, pending or a block number, got "soon"'],
    })
  })
})

/** The estimate of a spec with every estimategaslimit attribute, the sender from a task before it. */
const ESTIMATE = `sender [type="lowercase" input="${SENDER}"]
  estimate [type="estimategaslimit" to="${CONTRACT}" data="0x01" from="$(sender)"
    multiplier="1.5" evmChainID="31337" block="pending"]
  sender -> estimate`

describe('estimategaslimit as a spec author writes it', () => {
  it("takes every attribute a node's estimategaslimit reads, and asks the chain with each", async () => {
    const { chain, estimates } = chainEstimating(40_000n)
    const result = await runJob(loaded(ESTIMATE), { chain })
    expect(result.errors).toEqual([])
    expect(result.outputs).toEqual([60_000n])
    expect(estimates).toEqual([
      { from: SENDER, to: CONTRACT, data: '0x01', blockNumber: 'pending' },
    ])
  })

  it('refuses a spec without the contract or the data to estimate, naming the attribute', () => {
    expect(problemsOf('estimategaslimit', { data: '0x01' })).toEqual([
      'estimategaslimit needs the attribute to',
    ])
    expect(problemsOf('estimategaslimit', { to: CONTRACT })).toEqual([
      'estimategaslimit needs the attribute data',
    ])
  })

  it('refuses at load a literal its attribute does not take, and a sender written as a literal', () => {
    const valid = { to: CONTRACT, data: '0x01' }
    expect(
      refusals('estimategaslimit', valid, {
        to: '0x12',
        data: '0xabc',
        from: SENDER,
        multiplier: 'lots',
        evmChainID: '-1',
        block: '-3',
      }),
    ).toEqual({
      to: ['to must be a 0x address of 20 bytes, got "0x12"'],
      data: ['data must be 0x-hex of whole bytes, got "0xabc"'],
      from: [
        `from must be a $(variable): Chainlink ignores a value written here and reads the task's input instead, got "${SENDER}"`,
      ],
      multiplier: ['multiplier must be a number, got "lots"'],
      evmChainID: ['evmChainID must be a whole number from 0, got "-1"'],
      block: ['block must be latest, pending or a block number, got "-3"'],
    })
  })
})

// A run reads calldata that is not exactly 0x-hex as the UTF-8 bytes of its text, as a node does:
// " 0xab" would call the contract with 0x2030786162. The load check trimmed it and passed it.
describe('calldata written in the spec', () => {
  it('refuses 0x-hex with space around it, which a run would send as the bytes of the text', () => {
    for (const [type, attributes] of [
      ['ethcall', { contract: CONTRACT }],
      ['estimategaslimit', { to: CONTRACT }],
    ] as const) {
      expect(problemsOf(type, { ...attributes, data: ' 0xab' })).toEqual([
        'data must be 0x-hex of whole bytes, got " 0xab"',
      ])
      expect(problemsOf(type, { ...attributes, data: '0xab' })).toEqual([])
    }
  })
})

// Every run of a spec whose block is none of these failed ("block must be latest, pending or a
// block number") while validate passed it: the load check now reads it as the run does.
describe('the block a chain read is made at', () => {
  it('takes latest, pending and a block number, written with space around as the run reads them', async () => {
    for (const block of ['latest', ' pending ', '12', '']) {
      const { chain, estimates } = chainEstimating(40_000n)
      const job = loaded(
        `e [type="estimategaslimit" to="${CONTRACT}" data="0x01" block="${block}"]
  c [type="ethcall" contract="${CONTRACT}" data="0x01" block="${block}"]`,
      )
      expect((await runJob(job, { chain })).errors).toEqual([])
      const expected = block.trim() === '12' ? 12n : block.trim() || 'latest'
      expect(estimates.map((request) => request.blockNumber)).toEqual([expected])
      expect(chain.calls.map((call) => call.blockNumber)).toEqual([expected])
    }
  })
})

describe('estimategaslimit when pure tasks run in isolates', () => {
  const isolation = new TaskIsolation({
    threads: 1,
    memoryMb: 128,
    context: { limits: DEFAULT_PIPELINE_LIMITS },
  })
  afterAll(() => isolation.close())

  it("runs on the pipeline's own thread, where the chain is, and gives the same estimate", async () => {
    const { chain, estimates } = chainEstimating(40_000n)
    const result = await runJob(loaded(ESTIMATE), { chain, isolation })
    expect(result.errors).toEqual([])
    expect(result.outputs).toEqual([60_000n])
    expect(estimates).toHaveLength(1)
  })
})
