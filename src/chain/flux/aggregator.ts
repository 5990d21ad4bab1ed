import { Contract, getAddress, Interface, type Provider } from 'ethers'
import { FeedrunnerError } from '../../config/errors.ts'
import { shortReason } from '../operator-admin.ts'

/**
 * Chainlink's FluxAggregator (`@chainlink/contracts` v0.6) as feedrunner reads and calls it: the
 * functions and events its owner, its oracles and its consumers use. The signatures are the
 * contract's own; the compiled artifact's ABI holds the same.
 */
export const FLUX_AGGREGATOR_ABI = [
  'function submit(uint256 roundId, int256 submission)',
  'function changeOracles(address[] removed, address[] added, address[] addedAdmins, uint32 minSubmissions, uint32 maxSubmissions, uint32 restartDelay)',
  'function updateAvailableFunds()',
  'function withdrawPayment(address oracle, address recipient, uint256 amount)',
  'function withdrawablePayment(address oracle) view returns (uint256)',
  'function getAdmin(address oracle) view returns (address)',
  'function getOracles() view returns (address[])',
  'function availableFunds() view returns (uint128)',
  'function allocatedFunds() view returns (uint128)',
  'function paymentAmount() view returns (uint128)',
  'function minSubmissionCount() view returns (uint32)',
  'function maxSubmissionCount() view returns (uint32)',
  'function restartDelay() view returns (uint32)',
  'function timeout() view returns (uint32)',
  'function decimals() view returns (uint8)',
  'function minSubmissionValue() view returns (int256)',
  'function maxSubmissionValue() view returns (int256)',
  'function description() view returns (string)',
  'function owner() view returns (address)',
  'function linkToken() view returns (address)',
  'function latestRoundData() view returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)',
  'function getRoundData(uint80 roundId) view returns (uint80 roundId, int256 answer, uint256 startedAt, uint256 updatedAt, uint80 answeredInRound)',
  'function oracleRoundState(address oracle, uint32 queriedRoundId) view returns (bool eligibleToSubmit, uint32 roundId, int256 latestSubmission, uint64 startedAt, uint64 timeout, uint128 availableFunds, uint8 oracleCount, uint128 paymentAmount)',
  'event NewRound(uint256 indexed roundId, address indexed startedBy, uint256 startedAt)',
  'event AnswerUpdated(int256 indexed current, uint256 indexed roundId, uint256 updatedAt)',
  'event SubmissionReceived(int256 indexed submission, uint32 indexed round, address indexed oracle)',
  'event AvailableFundsUpdated(uint256 indexed amount)',
  'event OraclePermissionsUpdated(address indexed oracle, bool indexed whitelisted)',
  'event RoundDetailsUpdated(uint128 indexed paymentAmount, uint32 indexed minSubmissionCount, uint32 indexed maxSubmissionCount, uint32 restartDelay, uint32 timeout)',
] as const

export const fluxAggregatorInterface = new Interface(FLUX_AGGREGATOR_ABI)

/** topic0 of the logs the flux monitor acts on: a round started, an answer, a submission, the oracle list changed. */
export const FLUX_TOPICS = {
  newRound: fluxAggregatorInterface.getEvent('NewRound')!.topicHash,
  answerUpdated: fluxAggregatorInterface.getEvent('AnswerUpdated')!.topicHash,
  submissionReceived: fluxAggregatorInterface.getEvent('SubmissionReceived')!.topicHash,
  oraclePermissionsUpdated: fluxAggregatorInterface.getEvent('OraclePermissionsUpdated')!.topicHash,
} as const

/** What `oracleRoundState(oracle, 0)` says: the round this oracle should act on, and whether it may. */
export interface OracleRoundState {
  eligibleToSubmit: boolean
  roundId: number
  latestSubmission: bigint
  /** Seconds (chain time); 0 when the round has not started. */
  startedAt: number
  timeout: number
  availableFunds: bigint
  oracleCount: number
  paymentAmount: bigint
}

export interface RoundData {
  roundId: bigint
  answer: bigint
  startedAt: number
  updatedAt: number
  answeredInRound: bigint
}

export interface AggregatorState {
  address: string
  owner: string
  link: string
  description: string
  decimals: number
  paymentAmount: bigint
  minSubmissionCount: number
  maxSubmissionCount: number
  restartDelay: number
  timeout: number
  availableFunds: bigint
  allocatedFunds: bigint
  oracles: Array<{ address: string; admin: string; withdrawable: bigint }>
  /** The latest answered round; roundId 0 when no round has an answer yet. */
  latest: RoundData
  /** The rounds before the latest (newest first), as many as asked for. */
  rounds: RoundData[]
}

function contractAt(provider: Provider, address: string): Contract {
  return new Contract(getAddress(address), fluxAggregatorInterface, provider)
}

/**
 * `oracleRoundState(oracle, round)`: with round 0, the round the aggregator suggests for this oracle;
 * with a round's id, whether the oracle may submit to that round.
 */
export async function readOracleRoundState(
  provider: Provider,
  aggregator: string,
  oracle: string,
  roundId = 0,
  blockTag?: number,
): Promise<OracleRoundState> {
  const state = (await contractAt(provider, aggregator).getFunction('oracleRoundState')(
    getAddress(oracle),
    roundId,
    blockTag === undefined ? {} : { blockTag },
  )) as unknown as [boolean, bigint, bigint, bigint, bigint, bigint, bigint, bigint]
  return {
    eligibleToSubmit: state[0],
    roundId: Number(state[1]),
    latestSubmission: state[2],
    startedAt: Number(state[3]),
    timeout: Number(state[4]),
    availableFunds: state[5],
    oracleCount: Number(state[6]),
    paymentAmount: state[7],
  }
}

/** `latestRoundData()`, or round 0 with a zero answer while no round has been answered (it reverts then). */
export async function readLatestRound(
  provider: Provider,
  aggregator: string,
  blockTag?: number,
): Promise<RoundData> {
  try {
    return toRound(
      await contractAt(provider, aggregator).getFunction('latestRoundData')(
        blockTag === undefined ? {} : { blockTag },
      ),
    )
  } catch (error) {
    if (/No data present/.test(shortReason(error)))
      return { roundId: 0n, answer: 0n, startedAt: 0, updatedAt: 0, answeredInRound: 0n }
    throw error
  }
}

function toRound(result: unknown): RoundData {
  const [roundId, answer, startedAt, updatedAt, answeredInRound] = result as bigint[]
  return {
    roundId: roundId!,
    answer: answer!,
    startedAt: Number(startedAt),
    updatedAt: Number(updatedAt),
    answeredInRound: answeredInRound!,
  }
}

/** Everything `aggregator show` prints: configuration, funds, oracles and their payments, rounds. */
export async function readAggregator(
  provider: Provider,
  address: string,
  options: { rounds?: number } = {},
): Promise<AggregatorState> {
  const aggregator = getAddress(address)
  if ((await provider.getCode(aggregator)) === '0x')
    throw new FeedrunnerError(
      `no contract at ${aggregator} on this chain: is --aggregator the address aggregator deploy printed, and RPC_URL its chain?`,
      { kind: 'bad_input' },
    )
  const contract = contractAt(provider, aggregator)
  const call = <T>(name: string, ...args: unknown[]): Promise<T> =>
    contract.getFunction(name)(...args) as Promise<T>
  try {
    const [owner, link, description, decimals, payment, min, max, delay, timeout] =
      await Promise.all([
        call<string>('owner'),
        call<string>('linkToken'),
        call<string>('description'),
        call<bigint>('decimals'),
        call<bigint>('paymentAmount'),
        call<bigint>('minSubmissionCount'),
        call<bigint>('maxSubmissionCount'),
        call<bigint>('restartDelay'),
        call<bigint>('timeout'),
      ])
    const [available, allocated, oracleList, latest] = await Promise.all([
      call<bigint>('availableFunds'),
      call<bigint>('allocatedFunds'),
      call<string[]>('getOracles'),
      readLatestRound(provider, aggregator),
    ])
    const oracles = await Promise.all(
      oracleList.map(async (oracle) => ({
        address: getAddress(oracle),
        admin: getAddress(await call<string>('getAdmin', oracle)),
        withdrawable: await call<bigint>('withdrawablePayment', oracle),
      })),
    )
    const earlier: RoundData[] = []
    for (let id = latest.roundId - 1n; id > 0n && earlier.length < (options.rounds ?? 5); id--)
      earlier.push(toRound(await call('getRoundData', id).catch(() => [id, 0n, 0n, 0n, 0n])))
    return {
      address: aggregator,
      owner: getAddress(owner),
      link: getAddress(link),
      description,
      decimals: Number(decimals),
      paymentAmount: payment,
      minSubmissionCount: Number(min),
      maxSubmissionCount: Number(max),
      restartDelay: Number(delay),
      timeout: Number(timeout),
      availableFunds: available,
      allocatedFunds: allocated,
      oracles,
      latest,
      rounds: earlier,
    }
  } catch (error) {
    if (error instanceof FeedrunnerError) throw error
    throw new FeedrunnerError(
      `the contract at ${aggregator} does not answer as Chainlink's FluxAggregator (${shortReason(error)})`,
      { kind: 'bad_input', cause: error },
    )
  }
}
