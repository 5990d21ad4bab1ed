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
  /** The task's signal: the sender stops waiting when the task times out or the run stops. */
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
  blockNumber?: bigint | 'latest'
}

export interface ChainAccess {
  sendTransaction(tx: TransactionRequest): Promise<TransactionOutcome>
  call(tx: CallRequest): Promise<string>
}

/** Records transactions instead of sending them (dry runs, tests); calls go to `callHandler` if any. */
export class RecordingChainAccess implements ChainAccess {
  readonly transactions: TransactionRequest[] = []
  readonly calls: CallRequest[] = []

  constructor(private readonly callHandler?: (tx: CallRequest) => Promise<string>) {}

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
