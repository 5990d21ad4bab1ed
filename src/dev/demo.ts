import { getEndpoint, isEndpointName, type CatalogEntry } from '../feeds/catalog/index.ts'
import { answerLabel } from '../pipeline/index.ts'
import { DEFAULT_MIN_CONTRACT_PAYMENT_JUELS } from '../runner/admission.ts'
import { DEMO_RECIPIENT } from '../feeds/server/blockchain/demo-tokens.ts'
import { reduce, toDecimal } from '../reduce/index.ts'
import type { LoadedJob } from '../runner/job-registry.ts'
import { drivableShape, type FeedJobShape } from '../runner/feed-job.ts'
import { DEV_PUSH_FEEDS } from './push-feeds.ts'
import { sendConsumerRequests, waitForFulfilments, type ConsumerRequest } from './requests.ts'
import { DEV_BLOCKCHAIN_ID, type DevStack } from './stack.ts'

/** One demo request: a job, the parameters sent on chain, and the value the chain must end up with. */
export interface DemoCase {
  job: LoadedJob
  shape: FeedJobShape
  params: Array<[string, string]>
  /** The job's minContractPaymentLinkJuels, when it sets one (its chain's minimum applies else). */
  minimumPayment?: bigint
  /** What the feed service says, reduced independently of the adapter and the pipeline. */
  expected: unknown
  /** The same, asked again now: current weather changes on the hour (see matchesExpected). */
  expectedNow(): Promise<unknown>
}

export interface DemoResult extends DemoCase {
  requestId: string
  /** The value stored by the consumer, or undefined when it never arrived. */
  actual?: unknown
  latencyMs?: number
  ok: boolean
}

/**
 * Request parameters for a job, from the catalog's own examples (real values of the data set). The
 * blockchain family asks the dev chain itself: `devChain` names the transfer the dev stack made (its
 * blockchain id is DEV_BLOCKCHAIN_ID); without it the catalog's mainnet example stays.
 */
export function demoFeedParams(
  shape: FeedJobShape,
  entry: CatalogEntry,
  devChain?: { transferTx: string },
): Record<string, string> {
  const wanted = shape.params.filter((name) => name !== 'path' && name !== 'times')
  const variant = entry.variants?.find(
    (candidate) =>
      wanted.every((name) => name in candidate.example || name === 'unitOfMeasure') &&
      candidate.params.every((name) => wanted.includes(name)),
  )
  const example: Record<string, string> = { ...(variant?.example ?? entry.example) }
  if (devChain && entry.family === 'blockchain') {
    if (entry.name === 'account-balance')
      Object.assign(example, {
        blockchain: DEV_BLOCKCHAIN_ID,
        address: DEMO_RECIPIENT.toLowerCase(),
      })
    else Object.assign(example, { blockchain: DEV_BLOCKCHAIN_ID, hash: devChain.transferTx })
  }
  return Object.fromEntries(
    wanted
      .filter((name) => example[name] !== undefined)
      .map((name) => [name, example[name] as string]),
  )
}

/** The path a demo request asks for: the endpoint's natural result, inside the envelope's `data`. */
export function demoPath(entry: CatalogEntry): string {
  return `data.${entry.defaultResultPath ?? ''}`
}

/** `times` for an answer: decimal answers (odds, prices, temperatures) keep two decimals on chain. */
export function demoTimes(answer: unknown): string {
  const decimal = toDecimal(answer)
  return decimal !== undefined && !decimal.isInteger() ? '100' : '1'
}

/** Asks the feed service directly (not through the adapter) for the envelope a request will see. */
export async function fetchEnvelope(
  stack: DevStack,
  entry: CatalogEntry,
  params: Record<string, string>,
): Promise<unknown> {
  const url = new URL(entry.path, stack.feedServer.url)
  for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value)
  url.searchParams.set('key', stack.settings.FEED_API_KEY ?? '')
  const response = await fetch(url)
  const body = (await response.json()) as { data?: unknown; description?: string }
  if (!response.ok)
    throw new Error(
      `feed service answered ${response.status} for ${entry.name}: ${body.description ?? ''}`,
    )
  return body
}

/**
 * Why the demo cannot build a request for a job (it builds them from the feed catalog's examples and
 * checks one value against the feed service), or its shape when it can.
 */
function demoShape(
  stack: DevStack,
  job: LoadedJob,
): { ok: true; shape: FeedJobShape } | { ok: false; reason: string } {
  const spec = job.job.spec
  if (spec.type !== 'directrequest')
    return {
      ok: false,
      reason: `${job.job.file}: the demo sends requests, and it is a ${spec.type} job`,
    }
  const driven = drivableShape(job.job)
  if (!driven.ok) return driven
  const { shape } = driven
  const cannot = (why: string) => ({
    ok: false as const,
    reason: `${job.job.file}: the demo skips it: ${why}`,
  })
  if (!shape.endpoint || !isEndpointName(shape.endpoint))
    return cannot(
      `its bridge names no feed endpoint, so the catalog has no example request for it (npx feedrunner request ${job.name.includes(' ') ? JSON.stringify(job.name) : job.name} --param ... sends one)`,
    )
  if (shape.answerType === 'raw')
    return cannot(`it answers ${answerLabel(shape.answer)}, and the demo checks one value`)
  if (spec.contractAddress !== stack.contracts.addresses.operator)
    return cannot(`its Operator ${spec.contractAddress} is not this stack's`)
  return driven
}

/**
 * Builds one case per job: parameters from the data set, a path to the natural result, and `times`.
 * A job the demo cannot drive is left out, told to `onSkip` in one line.
 */
export async function buildDemoCases(
  stack: DevStack,
  jobs: readonly LoadedJob[],
  onSkip: (line: string) => void = () => undefined,
): Promise<DemoCase[]> {
  const cases: DemoCase[] = []
  for (const job of jobs) {
    const demo = demoShape(stack, job)
    if (!demo.ok) {
      // The push jobs of jobs/push/ are not requested: runPushChecks reads what they write.
      if (!DEV_PUSH_FEEDS.some((feed) => feed.externalJobId === job.externalJobId))
        onSkip(demo.reason)
      continue
    }
    const { shape } = demo
    const entry = getEndpoint(shape.endpoint!)
    const feedParams = demoFeedParams(
      shape,
      entry,
      stack.demoTokens ? { transferTx: stack.demoTokens.erc20.transferTx } : undefined,
    )
    const envelope = await fetchEnvelope(stack, entry, feedParams)
    const path = demoPath(entry)
    const times = demoTimes(reduce(envelope, { path, aliases: entry.aliases }))
    const params: Array<[string, string]> = Object.entries(feedParams)
    if (shape.params.includes('path')) params.push(['path', path])
    if (shape.params.includes('times')) params.push(['times', times])
    const type = shape.answerType as Exclude<typeof shape.answerType, 'raw'>
    const expectedOf = (answer: unknown) =>
      reduce(answer, {
        path,
        type,
        times: shape.params.includes('times') ? times : undefined,
        aliases: entry.aliases,
        truncation: 'trunc',
      })
    const spec = job.job.spec
    cases.push({
      job,
      shape,
      params,
      ...(spec.type === 'directrequest' && spec.minContractPaymentLinkJuels !== undefined
        ? { minimumPayment: spec.minContractPaymentLinkJuels }
        : {}),
      expected: expectedOf(envelope),
      expectedNow: async () => expectedOf(await fetchEnvelope(stack, entry, feedParams)),
    })
  }
  return cases
}

/**
 * Whether a value stored on chain is the case's expected one. A request made across the hour carries
 * the hour of its fetch, which may be after the case was built, so a mismatch is checked against the
 * feed service's answer of now.
 */
export async function matchesExpected(demoCase: DemoCase, actual: unknown): Promise<boolean> {
  if (String(actual) === String(demoCase.expected)) return true
  return String(actual) === String(await demoCase.expectedNow())
}

/** Sends every case through the FeedConsumer and waits for the values to be stored on chain. */
export async function runDemoCases(
  stack: DevStack,
  cases: readonly DemoCase[],
  timeoutMs = 60_000,
): Promise<DemoResult[]> {
  const { consumer, deployer, provider } = stack.contracts
  const fromBlock = await provider.getBlockNumber()
  const requests: ConsumerRequest[] = cases.map((demoCase) => ({
    externalJobId: demoCase.job.externalJobId,
    valueType: demoCase.shape.answerType,
    version: demoCase.shape.answer.method === 'fulfillOracleRequest' ? 1 : 2,
    params: demoCase.params,
    payment: demoCase.minimumPayment ?? DEFAULT_MIN_CONTRACT_PAYMENT_JUELS,
  }))
  const sent = await sendConsumerRequests(consumer, deployer, requests)
  const fulfilments = await waitForFulfilments(
    consumer,
    provider,
    sent.map((request) => request.requestId),
    { fromBlock, timeoutMs },
  )
  return Promise.all(
    cases.map(async (demoCase, index) => {
      const request = sent[index]!
      const fulfilment = fulfilments.get(request.requestId)
      const actual = fulfilment?.value
      return {
        ...demoCase,
        requestId: request.requestId,
        ...(fulfilment ? { actual, latencyMs: fulfilment.seenAt - request.sentAt } : {}),
        ok: fulfilment !== undefined && (await matchesExpected(demoCase, actual)),
      }
    }),
  )
}
