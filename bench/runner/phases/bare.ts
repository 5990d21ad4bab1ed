/**
 * The bare-fulfiller phase: the same job, the same number of requests, on a fresh chain like every
 * phase, answered by `bare-fulfiller.ts` (one process, one key, no adapter, no queue, no Redis). Its
 * rate and its own CPU per fulfilment are the ceiling the runner's phases are compared with.
 */
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startOwnedProcess, waitFor, type OwnedProcess } from '../../../src/dev/process.ts'
import { openChain, type Context } from '../load.ts'
import { cpuMsOf, memoryOf, perRequest, round, rpc, syscallsOf } from '../measure.ts'
import { perfNodeArgs, recordPerf } from '../perf-record.ts'
import { BARE_KEY, N, PHASE_TIMEOUT_MS } from '../settings.ts'
import {
  addressesOf,
  minedNonces,
  outcomeOf,
  sendAndAwaitFulfilments,
  type Outcome,
} from './outcome.ts'
import { phaseLabel, signPhaseRequests, warmUpWith } from './warm-up.ts'

const BARE_NAME = 'bare fulfiller'
const BARE_FULFILLER = join(dirname(fileURLToPath(import.meta.url)), '../bare-fulfiller.ts')

export interface BareResult extends Outcome {
  /** The bare fulfiller's own CPU time (user + system) per fulfilment, ms. */
  cpuMsPerFulfilment: number
  /** Its read and write system calls per fulfilment. */
  syscallsPerFulfilment: number
  /** anvil's CPU time per request during the phase (requests and fulfilments mined), ms. */
  anvilCpuMsPerRequest: number
  /** With BENCH_RPC_CALLS=1: the JSON-RPC calls anvil served per request, by method (the load generator's too). */
  rpcCallsPerRequest?: Record<string, number>
  peakRssMb: number
}

/** Starts the bare fulfiller on the chain and waits until its subscription is live. */
async function startBareFulfiller(
  ctx: Context,
  chain: Awaited<ReturnType<typeof openChain>>,
  label: string,
): Promise<OwnedProcess> {
  const bare = startOwnedProcess(
    label,
    process.execPath,
    [...perfNodeArgs(label), '--import', 'tsx', BARE_FULFILLER],
    {
      env: {
        ...process.env,
        ...ctx.baseEnv,
        BARE_RPC_URL: chain.anvil.rpcUrl,
        BARE_WS_URL: chain.anvil.wsUrl,
        BARE_KEY,
        BARE_OPERATOR: chain.dev.addresses.operator,
        BARE_EXTERNAL_JOB_ID: ctx.externalJobId,
        BARE_CHAIN_ID: String(chain.dev.chainId),
      },
      keepOutputChars: 20_000,
    },
  )
  try {
    await waitFor(
      'the bare fulfiller to listen',
      async () =>
        bare.child.exitCode !== null || bare.output().includes('bare fulfiller listening'),
      60_000,
      20,
    )
    if (bare.child.exitCode !== null)
      throw new Error(`the bare fulfiller exited:\n${bare.output()}`)
    await recordPerf(label, bare.pid)
  } catch (error) {
    await bare.stop()
    throw error
  }
  return bare
}

/** The bare-fulfiller phase; with `warmUp`, the process answers that many requests first (warm-up.ts). */
export async function runBare(ctx: Context, warmUp = 0): Promise<BareResult> {
  const label = phaseLabel(BARE_NAME, warmUp)
  const chain = await openChain(ctx.artifacts)
  let bare: OwnedProcess | undefined
  try {
    const phase = await signPhaseRequests(ctx, chain, N, warmUp)
    const signed = phase.measured
    bare = await startBareFulfiller(ctx, chain, label)
    await warmUpWith(chain, phase.warmUp, label, bare.pid)
    const head = Number(await rpc<string>(chain.anvil.rpcUrl, 'eth_blockNumber'))
    const addresses = addressesOf([BARE_KEY])
    const noncesBefore = await minedNonces(chain, addresses)
    const cpuBefore = cpuMsOf(bare.pid)
    const syscallsBefore = syscallsOf(bare.pid)
    const anvilCpuBefore = cpuMsOf(chain.anvil.process.pid)
    const rpcCallsBefore = chain.anvil.calls()
    const delivered = await sendAndAwaitFulfilments(chain, signed, { label, fromBlock: head + 1 })
    const rpcCallsAfter = chain.anvil.calls()
    const cpuMs = cpuMsOf(bare.pid) - cpuBefore
    const syscalls = syscallsOf(bare.pid) - syscallsBefore
    const anvilCpuMs = cpuMsOf(chain.anvil.process.pid) - anvilCpuBefore
    const peakRssMb = memoryOf(bare.pid)?.peakMb ?? Number.NaN
    const outcome = await outcomeOf(chain, delivered, { head, addresses, noncesBefore })
    if (outcome.fulfilled < N)
      console.error(
        `${label}: only ${outcome.fulfilled} of ${N} fulfilled within ${PHASE_TIMEOUT_MS} ms\n${bare.output().slice(-3_000)}`,
      )
    return {
      ...outcome,
      cpuMsPerFulfilment: round(cpuMs / Math.max(1, outcome.fulfilled), 2),
      syscallsPerFulfilment: round(syscalls / Math.max(1, outcome.fulfilled), 1),
      anvilCpuMsPerRequest: round(anvilCpuMs / N, 2),
      ...(rpcCallsBefore && rpcCallsAfter
        ? { rpcCallsPerRequest: perRequest(rpcCallsBefore, rpcCallsAfter, N) }
        : {}),
      peakRssMb,
    }
  } finally {
    await bare?.stop()
    await chain.stop()
    ctx.anvilPeakRssMb.push(chain.peakRssMb)
  }
}
