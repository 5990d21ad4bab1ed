import { z } from 'zod'
import { optional, positiveInt, withDefault } from './settings-kit.ts'

const address = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, { message: 'expected an address: 0x and 40 hex digits' })

/** The runner's settings: its work, the chain defaults it applies to jobs, its reads and sends. */
export const runnerSettings = {
  RUNS_API_TOKEN: optional(z.string().min(32, { message: 'expected at least 32 characters' }), {
    group: 'chain',
    sensitive: true,
    description:
      "The operator's token for POST /v2/jobs/<externalJobID>/runs (a webhook job's run), sent as `Authorization: Bearer <token>`; external initiators use their own pair (feedrunner initiators create NAME).",
    whenUnset: 'only external initiators start webhook runs',
  }),
  RUNS_API_MAX_BODY_BYTES: withDefault(positiveInt, 65_536, {
    group: 'chain',
    unit: 'bytes',
    description:
      "The largest body POST /v2/jobs/<externalJobID>/runs takes (the run's $(jobRun.requestBody)); a larger one is refused with 413 before it is read whole.",
  }),
  RUNS_API_MAX_CALLS_PER_MINUTE: withDefault(positiveInt, 600, {
    group: 'chain',
    unit: 'calls',
    description:
      "Calls of POST /v2/jobs/<externalJobID>/runs each caller (an external initiator, or the operator token) may make in any minute, by Redis's clock; past it a call is refused with 429 and Retry-After before its body is read, and costs no run.",
  }),
  RUNNER_CONCURRENCY: withDefault(positiveInt, 64, {
    group: 'chain',
    unit: 'requests',
    description:
      'Requests one runner process works on at once, per sender key it owns (a run holds its slot until mined); a process that owns no key runs none and stands by.',
  }),
  RUNNER_FROM_BLOCK: optional(z.coerce.number().int().nonnegative(), {
    group: 'chain',
    unit: 'block',
    description:
      'First block a runner reads when Redis holds no checkpoint yet (a first start, or a Redis that lost its state).',
    whenUnset:
      "the first block of the last 24 hours by the chain's time: the requests still open there run, the ones past their cancelExpiration get their run record (refused)",
  }),
  RUNNER_RECONCILE_INTERVAL_MS: withDefault(positiveInt, 30_000, {
    group: 'chain',
    unit: 'ms',
    description:
      "How often run records that are not settled (received, running, sent, errored) are checked against the Operator's OracleResponse and CancelOracleRequest logs; a run the chain shows fulfilled or cancelled says so.",
  }),
  RUNNER_LOCK_MS: withDefault(positiveInt, 30_000, {
    group: 'chain',
    unit: 'ms',
    description:
      "A request held by a crashed runner process is taken over after about this long (its requests job's lock); its sender keys after the lesser of this and 15 s; a requester's admission slots after the greater of this and 5 s (runner/retry-policy.ts leasesFromLock).",
  }),
  RUN_ATTEMPTS: withDefault(positiveInt, 8, {
    group: 'chain',
    unit: 'tries',
    description:
      'How often a request is run before its run ends errored, when its failures are retryable (as the task that failed declared: an adapter away, a node away); a failure that is not retryable ends the run at once.',
  }),
  RUN_BACKOFF_MS: withDefault(positiveInt, 1_000, {
    group: 'chain',
    unit: 'ms',
    description:
      "The wait before a request's second try; it doubles at each try after (the default 8 tries wait 1+2+...+64 s, about two minutes).",
  }),
  // Kept as its digits (settings stay JSON); chains.ts reads it as a bigint.
  MIN_CONTRACT_PAYMENT_LINK_JUELS: withDefault(
    z.string().regex(/^\d{1,30}$/, { message: 'expected a whole number of LINK juels' }),
    '10000000000000',
    {
      group: 'chain',
      unit: 'juels',
      description:
        "The least payment a request must carry when its job sets no minContractPaymentLinkJuels: 10^13 juels (0.00001 LINK), a Chainlink node's MinContractPayment. Per chain in CHAINS_FILE (min_contract_payment_link_juels). 0 lets a request pay nothing.",
    },
  ),
  FORWARDER_ADDRESS: optional(address, {
    group: 'chain',
    unit: 'address',
    description:
      "Chainlink's AuthorizedForwarder the fulfilments of jobs with forwardingAllowed = true go through (its forward(), from a sender key it authorises; the Operator authorises the forwarder). Per chain in CHAINS_FILE (forwarder_address). The dev stack deploys one.",
    whenUnset: 'a job with forwardingAllowed = true is refused at start, with the reason',
  }),
  MIN_INCOMING_CONFIRMATIONS: optional(z.coerce.number().int().nonnegative().max(1000), {
    group: 'chain',
    unit: 'blocks',
    description:
      "The least confirmations a request waits for before it runs, whatever its job says: a job's minIncomingConfirmations can only raise it, as on a Chainlink node (EVM.MinIncomingConfirmations). Per chain in CHAINS_FILE (min_incoming_confirmations).",
    whenUnset:
      "1 on the dev chain ids 31337 and 1337 (blocks come only with transactions there), else 3 (Chainlink's default)",
  }),
  TX_CONFIRMATIONS: withDefault(positiveInt, 1, {
    group: 'chain',
    unit: 'blocks',
    description: "How deep a fulfilment's receipt must be before its run counts as fulfilled.",
  }),
  CHAIN_FINALITY_DEPTH: withDefault(positiveInt, 50, {
    group: 'chain',
    unit: 'blocks',
    description:
      "How deep a block must be before no reorg can take it away (Chainlink's EVM.FinalityDepth): a key's owner watches each fulfilment it sent until it is this deep, and sends one a reorg dropped again, the same bytes. Per chain in CHAINS_FILE (finality_depth).",
  }),
  TX_BROADCAST_INTERVAL_MS: withDefault(z.coerce.number().int().nonnegative().max(10_000), 50, {
    group: 'chain',
    unit: 'ms',
    description:
      'Least time between two broadcasts of one key; what is signed meanwhile leaves in one JSON-RPC batch. 0: as soon as the node answered the one before.',
  }),
  CHAIN_LOG_RANGE_BLOCKS: withDefault(positiveInt, 2_000, {
    group: 'chain',
    unit: 'blocks',
    description:
      'The widest block range of one eth_getLogs call the reconciler, a rebuild from the chain and a run that finds its request closed ask (providers refuse wide ones).',
  }),
  CHAIN_POLL_INTERVAL_MS: withDefault(positiveInt, 1_000, {
    group: 'chain',
    unit: 'ms',
    description:
      'How often the listener polls an HTTP RPC node for new heads, and the sender for the receipts of what it sent (while it has any).',
  }),
}
