/**
 * The baseline: N requests are made first, then N pre-signed `fulfillOracleRequest2` transactions for
 * them are sent straight to anvil from one authorised key, in nonce order, as JSON-RPC batches of
 * BENCH_BASELINE_WINDOW: the chain's own limit.
 */
import { AbiCoder, Wallet, type Log } from 'ethers'
import {
  decodeOperatorLog,
  encodeFulfillOracleRequest2,
  ORACLE_REQUEST_TOPIC,
  type OracleRequestEvent,
} from '../../../src/chain/operator.ts'
import {
  sendRawInNonceOrder,
  signConsumerRequests,
  waitForFulfilments,
  waitForNonce,
} from '../../../src/dev/requests.ts'
import { minedSender, openChain, REQUEST, type Chain, type Context } from '../load.ts'
import { cpuMsOf, round, rpc } from '../measure.ts'
import { sendRequests } from './outcome.ts'
import { BASELINE_KEY, BASELINE_WINDOW, EXPECTED_VALUE, N, step } from '../settings.ts'

export interface BaselineResult {
  transactions: number
  /** Transactions per JSON-RPC batch, sent one batch after another. */
  window: number
  seconds: number
  perSecond: number
  allMined: boolean
  /** anvil's CPU time per fulfilment (ms). */
  anvilCpuMsPerTx: number
  /** anvil's CPU time per request while the baseline's requests were made and mined (ms). */
  anvilCpuMsPerRequest: number
  blocks: number
  anvilFlushes: number
}

/** N requests made and mined; their OracleRequest logs, and anvil's CPU a request meanwhile. */
async function openRequests(ctx: Context, chain: Chain) {
  const { anvil, dev } = chain
  const fromBlock = Number(await rpc<string>(anvil.rpcUrl, 'eth_blockNumber')) + 1
  step(`baseline: making ${N} requests`)
  const requests = await signConsumerRequests(
    dev.consumer,
    dev.deployer,
    Array.from({ length: N }, () => REQUEST(ctx)),
  )
  const cpuBefore = cpuMsOf(anvil.process.pid)
  const { sent } = await sendRequests(chain, requests, { label: 'baseline', fromBlock })
  const anvilCpuMsPerRequest = round((cpuMsOf(anvil.process.pid) - cpuBefore) / N, 2)
  const toBlock = Math.max(...sent.map((item) => item.blockNumber))
  const events = (
    await dev.provider.getLogs({
      address: dev.addresses.operator,
      topics: [ORACLE_REQUEST_TOPIC],
      fromBlock,
      toBlock,
    })
  )
    .map((log: Log) => decodeOperatorLog(log, dev.chainId))
    .filter((event): event is OracleRequestEvent => event?.kind === 'request')
  if (events.length !== N)
    throw new Error(`baseline: expected ${N} OracleRequest logs, found ${events.length}`)
  return { events, toBlock, anvilCpuMsPerRequest }
}

/** The fulfilments of `events`, signed by the baseline's key on consecutive nonces. */
async function signFulfilments(chain: Chain, events: readonly OracleRequestEvent[]) {
  const { anvil, dev } = chain
  const wallet = new Wallet(BASELINE_KEY)
  const nonce = Number(
    await rpc<string>(anvil.rpcUrl, 'eth_getTransactionCount', [wallet.address, 'pending']),
  )
  const block = await rpc<{ baseFeePerGas: string }>(anvil.rpcUrl, 'eth_getBlockByNumber', [
    'latest',
    false,
  ])
  const maxFeePerGas = BigInt(block.baseFeePerGas) * 3n + 10n ** 9n
  const answer = (event: OracleRequestEvent) =>
    AbiCoder.defaultAbiCoder().encode(['bytes32', 'uint256'], [event.requestId, EXPECTED_VALUE])
  const raws = await Promise.all(
    events.map((event, index) =>
      wallet.signTransaction({
        type: 2,
        chainId: dev.chainId,
        nonce: nonce + index,
        to: dev.addresses.operator,
        gasLimit: 500_000,
        maxFeePerGas,
        maxPriorityFeePerGas: 10n ** 9n,
        data: encodeFulfillOracleRequest2(event, answer(event)),
      }),
    ),
  )
  return { address: wallet.address, nonce, raws }
}

/** Sends the signed fulfilments in batches, and times them until the last is mined. */
async function sendFulfilments(chain: Chain, signed: Awaited<ReturnType<typeof signFulfilments>>) {
  const { anvil, backstop } = chain
  const flushesBefore = backstop.flushes
  const headBefore = Number(await rpc<string>(anvil.rpcUrl, 'eth_blockNumber'))
  const cpuBefore = cpuMsOf(anvil.process.pid)
  const started = performance.now()
  await sendRawInNonceOrder(anvil.rpcUrl, signed.raws, { window: BASELINE_WINDOW })
  await waitForNonce(minedSender(anvil.rpcUrl), signed.address, signed.nonce + N, {
    timeoutMs: 60_000,
  })
  const seconds = (performance.now() - started) / 1000
  return {
    seconds,
    anvilCpuMsPerTx: round((cpuMsOf(anvil.process.pid) - cpuBefore) / N, 2),
    blocks: Number(await rpc<string>(anvil.rpcUrl, 'eth_blockNumber')) - headBefore,
    anvilFlushes: backstop.flushes - flushesBefore,
  }
}

/** N pre-signed fulfilments of real requests, straight to the chain from one key. */
export async function runBaseline(ctx: Context): Promise<BaselineResult> {
  const chain = await openChain(ctx.artifacts)
  try {
    const { events, toBlock, anvilCpuMsPerRequest } = await openRequests(ctx, chain)
    step('baseline: requests mined, signing the fulfilments')
    const signed = await signFulfilments(chain, events)
    step('baseline: sending')
    const { seconds, ...sending } = await sendFulfilments(chain, signed)
    const fulfilled = await waitForFulfilments(
      chain.dev.consumer,
      chain.dev.provider,
      events.map((event) => event.requestId),
      { fromBlock: toBlock, timeoutMs: 10_000 },
    )
    return {
      transactions: N,
      window: BASELINE_WINDOW,
      seconds: round(seconds, 2),
      perSecond: round(N / seconds),
      allMined: fulfilled.size === N,
      anvilCpuMsPerRequest,
      ...sending,
    }
  } finally {
    await chain.stop()
    ctx.anvilPeakRssMb.push(chain.peakRssMb)
  }
}
