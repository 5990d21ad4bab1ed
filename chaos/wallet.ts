import { type Contract, type JsonRpcProvider, type Wallet, keccak256 } from 'ethers'
import { VALUE_TYPES, waitForNonce, type ConsumerRequest } from '../src/dev/requests.ts'
import { specIdAscii } from '../src/chain/operator.ts'
import { rpcBatch } from './rpc.ts'

/** A transaction the harness sent: a request of the plan, or a cancel. */
export interface HarnessTx {
  nonce: number
  raw: string
  hash: string
  /** `request:<index>` (the plan's, storm requests after the paced ones) or `cancel:<request id>`. */
  purpose: string
}

const GAS_LIMIT = 600_000n
// Fixed and generous: the harness's transactions must never wait on fees (anvil's base fee is ~1 gwei).
const MAX_FEE = 200_000_000_000n
const PRIORITY_FEE = 1_000_000_000n

/**
 * Anvil's account 0, which deployed the consumers and makes (and cancels) every request through one
 * of them: each consumer is a requester of its own to the Operator and the runners. It keeps its own
 * nonce and every raw transaction it signed, sends them to anvil in nonce order, and sends again,
 * same bytes, whatever a reorg took away.
 */
export class HarnessWallet {
  private readonly sent: HarnessTx[] = []
  private nextNonce = 0
  private chainId = 0n
  private consumerAddresses: string[] = []
  /** Sends one at a time, in nonce order (anvil keeps a transaction ahead of its nonce queued). */
  private line: Promise<unknown> = Promise.resolve()

  constructor(
    private readonly signer: Wallet,
    /** The requesters: FeedConsumer contracts, in the schedule's order (RequestPlan.requester). */
    private readonly consumers: readonly Contract[],
    private readonly rpcUrl: string,
  ) {}

  async init(): Promise<void> {
    const provider = this.signer.provider as JsonRpcProvider
    this.chainId = (await provider.getNetwork()).chainId
    this.consumerAddresses = await Promise.all(
      this.consumers.map(async (consumer) => (await consumer.getAddress()).toLowerCase()),
    )
    this.nextNonce = await provider.getTransactionCount(this.signer.address, 'pending')
  }

  get address(): string {
    return this.signer.address
  }

  /** The requesters' addresses (lower case), in the schedule's order. */
  get requesters(): readonly string[] {
    return this.consumerAddresses
  }

  get transactions(): readonly HarnessTx[] {
    return this.sent
  }

  /** Makes `request` through consumer `requester`. */
  request(request: ConsumerRequest, purpose: string, requester: number): Promise<HarnessTx> {
    const to = this.consumerAddresses[requester]
    if (to === undefined) throw new Error(`no requester ${requester} in this schedule's stack`)
    return this.send(
      to,
      this.consumers[0]!.interface.encodeFunctionData('requestData', [
        specIdAscii(request.externalJobId),
        request.payment,
        VALUE_TYPES.indexOf(request.valueType),
        request.params.map(([key]) => key),
        request.params.map(([, value]) => value),
      ]),
      purpose,
    )
  }

  /** Cancels a request through the consumer that made it (only its requester may). */
  cancel(requestId: string, expiration: bigint, requester: string): Promise<HarnessTx> {
    return this.send(
      requester,
      this.consumers[0]!.interface.encodeFunctionData('cancelRequest', [requestId, expiration]),
      `cancel:${requestId}`,
    )
  }

  /** Signs and broadcasts in the order of the calls: nonces go to anvil in order. */
  private send(to: string, data: string, purpose: string): Promise<HarnessTx> {
    const nonce = this.nextNonce++
    const sending = this.line.then(async () => {
      const raw = await this.signer.signTransaction({
        type: 2,
        chainId: this.chainId,
        nonce,
        to,
        gasLimit: GAS_LIMIT,
        maxFeePerGas: MAX_FEE,
        maxPriorityFeePerGas: PRIORITY_FEE,
        data,
      })
      const tx = { nonce, raw, hash: keccak256(raw), purpose }
      this.sent.push(tx)
      await this.broadcast([raw])
      return tx
    })
    this.line = sending.catch(() => undefined)
    return sending
  }

  /** Sends again every transaction the chain has not mined (after a reorg dropped some), in nonce order. */
  async resendUnmined(): Promise<number> {
    const provider = this.signer.provider as JsonRpcProvider
    const mined = await provider.getTransactionCount(this.signer.address, 'latest')
    const unmined = this.sent.filter((tx) => tx.nonce >= mined)
    const resend = this.line.then(() =>
      this.broadcast(
        unmined.map((tx) => tx.raw),
        true,
      ),
    )
    this.line = resend.catch(() => undefined)
    await resend
    return unmined.length
  }

  /** Waits until every transaction sent is mined, sending the unmined ones again when the chain stalls. */
  async allMined(timeoutMs: number): Promise<void> {
    const provider = this.signer.provider as JsonRpcProvider
    await waitForNonce(provider, this.signer.address, this.nextNonce, {
      timeoutMs,
      stallMs: 5_000,
      resend: async () => {
        await this.resendUnmined()
      },
    })
  }

  /** Broadcasts raw transactions in one JSON-RPC batch; a refusal throws unless `again` (a node that has it says so). */
  private async broadcast(raws: readonly string[], again = false): Promise<void> {
    if (raws.length === 0) return
    const outcomes = await rpcBatch(
      this.rpcUrl,
      raws.map((raw) => ['eth_sendRawTransaction', [raw]] as const),
    )
    const refused = outcomes.find((outcome) => !outcome.ok)
    if (refused && !refused.ok && !again)
      throw new Error(`anvil refused the harness's transaction: ${refused.message}`)
  }
}
