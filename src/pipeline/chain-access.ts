/**
 * What the ethtx and ethcall tasks need from a chain, injected into the run so the pipeline depends on
 * no concrete sender: the runner wires the real transaction sender, the dry run records instead.
 */
export interface TransactionRequest {
  /** Contract to call (0x address). */
  to: string
  /** Calldata, 0x-hex. */
  data: string
  gasLimit?: bigint
  minConfirmations?: number
  /** Whether a revert fails the task (ethtx `failOnRevert`). */
  failOnRevert?: boolean
  /** Same key, same transaction: lets a sender drop a duplicate after a restart. */
  idempotencyKey: string
  /** The ethtx task's `evmChainID`, when given. */
  evmChainID?: bigint
  /**
   * Run it with eth_call first and send nothing if that reverts: the ethtx task's
   * `transmitChecker={"CheckerType": "simulate"}`, off by default on a Chainlink node. The runner's
   * sender simulates every transaction just before it signs it, whatever this says.
   */
  simulate?: boolean
  /**
   * The task's signal: the sender stops waiting, and a wait for minConfirmations ends, when the task
   * times out or the run stops.
   */
  signal?: AbortSignal
}

export interface TransactionOutcome {
  txHash?: string
  /** For example 'sent', 'confirmed', 'recorded' (dry run), 'already-done'. */
  status: string
}

export interface CallRequest {
  to: string
  data: string
  from?: string
  gasLimit?: bigint
  blockNumber?: bigint | 'latest' | 'pending'
  /** The ethcall task's gasPrice (legacy) or gasTipCap/gasFeeCap (EIP-1559), when given. */
  gasPrice?: bigint
  maxPriorityFeePerGas?: bigint
  maxFeePerGas?: bigint
}

/** An eth_estimateGas request (the estimategaslimit task). */
export interface GasEstimateRequest {
  from: string
  to: string
  data: string
  blockNumber?: bigint | 'latest' | 'pending'
}

export type { BlockRoots } from '../chain/block-roots.ts'

export interface ChainAccess {
  sendTransaction(tx: TransactionRequest): Promise<TransactionOutcome>
  call(tx: CallRequest): Promise<string>
  /** eth_estimateGas; a chain access without it cannot run estimategaslimit tasks. */
  estimateGas?(request: GasEstimateRequest): Promise<bigint>
}

/** Records transactions instead of sending them (dry runs, tests); calls go to `callHandler` if any. */
export class RecordingChainAccess implements ChainAccess {
  readonly transactions: TransactionRequest[] = []
  readonly calls: CallRequest[] = []

  constructor(
    private readonly callHandler?: (tx: CallRequest) => Promise<string>,
    private readonly estimateHandler?: (request: GasEstimateRequest) => Promise<bigint>,
  ) {}

  async estimateGas(request: GasEstimateRequest): Promise<bigint> {
    if (!this.estimateHandler)
      throw new Error(`no chain to estimate gas for ${request.to} on (dry run)`)
    return this.estimateHandler(request)
  }

  async sendTransaction(tx: TransactionRequest): Promise<TransactionOutcome> {
    this.transactions.push(tx)
    return { status: 'recorded' }
  }

  async call(tx: CallRequest): Promise<string> {
    this.calls.push(tx)
    if (!this.callHandler) throw new Error(`no chain to call ${tx.to} on (dry run)`)
    return this.callHandler(tx)
  }
}
