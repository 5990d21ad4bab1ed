import { formatUnits, getAddress, parseUnits } from 'ethers'
import { FeedrunnerError } from '../config/errors.ts'
import { endpointOf } from '../config/settings.ts'
import { readAggregator, type RoundData } from '../chain/flux/aggregator.ts'
import {
  addOracles,
  deployAggregator,
  withdrawOraclePayment,
} from '../chain/flux/aggregator-admin.ts'
import {
  link,
  onChain,
  ownerSigner,
  print,
  senderAddresses,
  type OwnerOptions,
} from './operator-actions.ts'
import { renderTable } from './table.ts'

export interface AggregatorDeployCommandOptions extends OwnerOptions {
  payment: string
  timeout: string
  decimals: string
  description: string
  minValue: string
  maxValue?: string
  link?: string
  newLink?: boolean
  fund?: string
}

export interface AddOraclesCommandOptions extends OwnerOptions {
  aggregator: string
  oracle: string[]
  admin?: string
  minSubmissions: string
  maxSubmissions?: string
  restartDelay: string
}

export interface AggregatorShowCommandOptions {
  aggregator: string
  rounds: string
  json?: boolean
}

export interface AggregatorWithdrawCommandOptions extends OwnerOptions {
  aggregator: string
  oracle?: string
  to?: string
  amount?: string
}

function linkAmount(option: string, value: string): bigint {
  try {
    const juels = parseUnits(value, 18)
    if (juels >= 0n) return juels
  } catch {
    // said below
  }
  throw new FeedrunnerError(`${option} ${value}: expected an amount of LINK, e.g. 0.1`, {
    kind: 'bad_input',
  })
}

function whole(option: string, value: string, signed = false): bigint {
  if (!(signed ? /^-?\d+$/ : /^\d+$/).test(value.trim()))
    throw new FeedrunnerError(`${option} ${value}: expected a whole number`, { kind: 'bad_input' })
  return BigInt(value.trim())
}

export async function deployAction(options: AggregatorDeployCommandOptions): Promise<void> {
  await onChain(async ({ provider, chainId }) => {
    const owner = ownerSigner(options, provider)
    const decimals = Number(whole('--decimals', options.decimals))
    const deployment = await deployAggregator(owner, {
      link: options.link,
      newLink: options.newLink,
      paymentAmount: linkAmount('--payment', options.payment),
      timeout: Number(whole('--timeout', options.timeout)),
      decimals,
      description: options.description,
      minSubmissionValue: whole('--min-value', options.minValue, true),
      maxSubmissionValue:
        options.maxValue === undefined ? undefined : whole('--max-value', options.maxValue, true),
      fund: options.fund === undefined ? undefined : linkAmount('--fund', options.fund),
      progress: (line) => console.error(line),
    })
    const json = {
      aggregator: deployment.aggregator,
      link: deployment.link,
      owner: deployment.owner,
      funded: deployment.funded.toString(),
    }
    print(options, json, () =>
      [
        renderTable(
          ['contract', 'address'],
          [
            ['FluxAggregator', deployment.aggregator],
            [deployment.linkDeployed ? 'LinkToken (deployed here)' : 'LINK', deployment.link],
            ['owner', deployment.owner],
            ['funded with', link(deployment.funded)],
          ],
        ),
        '',
        `on chain ${chainId}. Next: feedrunner aggregator add-oracles --aggregator ${deployment.aggregator} --min-submissions <n> ...`,
      ].join('\n'),
    )
  })
}

export async function addOraclesAction(options: AddOraclesCommandOptions): Promise<void> {
  await onChain(async ({ settings, provider, chainId }) => {
    const owner = ownerSigner(options, provider)
    const { addresses, from } = senderAddresses(settings, chainId, options.oracle)
    const result = await addOracles(owner, options.aggregator, addresses, {
      admins: options.admin ? addresses.map(() => options.admin as string) : undefined,
      minSubmissions: Number(whole('--min-submissions', options.minSubmissions)),
      maxSubmissions:
        options.maxSubmissions === undefined
          ? undefined
          : Number(whole('--max-submissions', options.maxSubmissions)),
      restartDelay: Number(whole('--restart-delay', options.restartDelay)),
    })
    print(
      options,
      { aggregator: getAddress(options.aggregator), oracles: result.oracles, tx: result.tx },
      () =>
        [
          `oracles of ${getAddress(options.aggregator)} (${from} added):`,
          ...result.oracles.map((oracle) => `  ${oracle}`),
          `transaction: ${result.tx}`,
        ].join('\n'),
    )
  })
}

function roundJson(round: RoundData, decimals: number) {
  return {
    roundId: round.roundId.toString(),
    answer: round.answer.toString(),
    value: formatUnits(round.answer, decimals),
    startedAt: round.startedAt,
    updatedAt: round.updatedAt,
    answeredInRound: round.answeredInRound.toString(),
  }
}

/** The node's sender addresses when it has any configured; show works without them. */
function nodeAddresses(...args: Parameters<typeof senderAddresses>): string[] {
  try {
    return senderAddresses(...args).addresses.map((address) => getAddress(address))
  } catch {
    return []
  }
}

export async function showAction(options: AggregatorShowCommandOptions): Promise<void> {
  await onChain(async ({ settings, provider, chainId }) => {
    const state = await readAggregator(provider, options.aggregator, {
      rounds: Number(whole('--rounds', options.rounds)),
    })
    const node = new Set(nodeAddresses(settings, chainId, []))
    const ours = state.oracles.filter((oracle) => node.has(oracle.address))
    const json = {
      aggregator: state.address,
      chainId,
      rpc: endpointOf(settings.RPC_URL!),
      owner: state.owner,
      description: state.description,
      decimals: state.decimals,
      linkToken: state.link,
      paymentAmount: state.paymentAmount.toString(),
      minSubmissionCount: state.minSubmissionCount,
      maxSubmissionCount: state.maxSubmissionCount,
      restartDelay: state.restartDelay,
      timeout: state.timeout,
      availableFunds: state.availableFunds.toString(),
      allocatedFunds: state.allocatedFunds.toString(),
      latestRound: roundJson(state.latest, state.decimals),
      rounds: state.rounds.map((round) => roundJson(round, state.decimals)),
      oracles: state.oracles.map((oracle) => ({
        address: oracle.address,
        admin: oracle.admin,
        withdrawable: oracle.withdrawable.toString(),
        thisNode: node.has(oracle.address),
      })),
      nodeWithdrawable: ours.reduce((sum, oracle) => sum + oracle.withdrawable, 0n).toString(),
    }
    print(options, json, () => showTable(state, ours.length, json.nodeWithdrawable, chainId))
  })
}

function showTable(
  state: Awaited<ReturnType<typeof readAggregator>>,
  ours: number,
  nodeWithdrawable: string,
  chainId: number,
): string {
  const answered = (round: RoundData) =>
    round.roundId === 0n
      ? '(no round answered yet)'
      : `round ${round.roundId}: ${formatUnits(round.answer, state.decimals)} at ${new Date(round.updatedAt * 1000).toISOString()}`
  return [
    renderTable(
      ['FluxAggregator', `${state.address} (chain ${chainId}): ${state.description}`],
      [
        ['owner', state.owner],
        ['latest', answered(state.latest)],
        ...state.rounds.map((round) => ['', answered(round)]),
        [
          'rounds',
          `${state.minSubmissionCount}-${state.maxSubmissionCount} submissions, restart delay ${state.restartDelay}, timeout ${state.timeout} s`,
        ],
        ['payment', `${link(state.paymentAmount)} per submission`],
        ['available funds', link(state.availableFunds)],
        ['allocated to oracles', link(state.allocatedFunds)],
        ['this node', `${ours} oracle key(s), ${link(BigInt(nodeWithdrawable))} withdrawable`],
      ],
    ),
    '',
    renderTable(
      ['oracle', 'admin', 'withdrawable'],
      state.oracles.map((oracle) => [oracle.address, oracle.admin, link(oracle.withdrawable)]),
    ),
  ].join('\n')
}

export async function withdrawAction(options: AggregatorWithdrawCommandOptions): Promise<void> {
  await onChain(async ({ settings, provider, chainId }) => {
    const admin = ownerSigner(options, provider)
    let oracle = options.oracle
    if (oracle === undefined) {
      const { addresses } = senderAddresses(settings, chainId, [])
      if (addresses.length !== 1)
        throw new FeedrunnerError(
          `the node has ${addresses.length} sender keys: name the oracle with --oracle <address>`,
          { kind: 'bad_input' },
        )
      oracle = addresses[0] as string
    }
    const result = await withdrawOraclePayment(admin, options.aggregator, oracle, {
      recipient: options.to,
      amount: options.amount === undefined ? undefined : linkAmount('--amount', options.amount),
    })
    print(
      options,
      {
        aggregator: getAddress(options.aggregator),
        oracle: getAddress(oracle),
        recipient: result.recipient,
        amount: result.amount.toString(),
        tx: result.tx ?? null,
      },
      () =>
        result.tx
          ? `withdrew ${link(result.amount)} earned by ${getAddress(oracle)} to ${result.recipient} in ${result.tx}`
          : `nothing to withdraw for ${getAddress(oracle)}`,
    )
  })
}
