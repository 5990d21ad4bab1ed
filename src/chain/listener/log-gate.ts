import type { Log } from 'ethers'
import { bloomMayHoldLog } from '../logs-bloom.ts'
import { CANCEL_ORACLE_REQUEST_TOPIC, ORACLE_REQUEST_TOPIC } from '../operator.ts'
import type { HeadHeader } from '../provider.ts'
import type { ChainReader, HeadRef } from './chain-reader.ts'
import type { ListenerLog } from './types.ts'

const OPERATOR_TOPICS = [ORACLE_REQUEST_TOPIC, CANCEL_ORACLE_REQUEST_TOPIC] as const

/**
 * Decides whether a scan's range is worth an eth_getLogs call: on an idle chain most blocks cannot
 * hold an Operator's request or cancel, and their headers (already read or notified for the head and
 * the reorg check) say so for free. A block cannot hold one when its header shows no transaction
 * (consensus: nothing to trust), or when the chain has shown that it fills its blooms and the
 * block's bloom holds no Operator address or no request/cancel topic. A block whose canonical header
 * is not known (not linked down from the head) may hold one: its logs are read as they always were.
 */
export interface LogGate {
  /** Whether some block of [from, to] below `head` may hold a request or cancel of an Operator. */
  mayHoldLogs(head: HeadRef, from: number, to: number): boolean
  /**
   * Checks logs read from the node against the headers known for their blocks, at no cost: a log in a
   * block whose bloom says it cannot be there means the chain's blooms lie (a node or a proxy that
   * zeroes or mangles them), and they are never trusted again by this gate.
   */
  checkLogs(head: HeadRef, logs: readonly Log[]): void
  /**
   * Once the blooms were found lying: the lowest block skipped by its bloom alone, whose logs must be
   * read again (a request there was missed). Answers it once; undefined otherwise.
   */
  takeRereadFrom(): number | undefined
}

export interface LogGateOptions {
  reader: ChainReader
  /** The Operators whose logs the reader reads (the listener's current list). */
  operators: () => readonly string[]
  log?: ListenerLog
}

/** Why a block need not be read: no transaction (consensus), its bloom (trusted), or it may hold one. */
type Verdict = 'no-transaction' | 'bloom' | 'may-hold'

export function createLogGate({ reader, operators, log }: LogGateOptions): LogGate {
  let bloomsDisproved = false
  /** The lowest block skipped because of its bloom alone: read again if the blooms prove wrong. */
  let lowestSkippedByBloom: number | undefined
  let rereadFrom: number | undefined

  function verdictOf(header: HeadHeader | undefined, addresses: readonly string[]): Verdict {
    if (!header) return 'may-hold'
    if (header.noTransactions === true) return 'no-transaction'
    const bloomsTrusted = !bloomsDisproved && reader.bloomsFilled
    if (!bloomsTrusted || header.logsBloom === undefined) return 'may-hold'
    return bloomMayHoldLog(header.logsBloom, addresses, OPERATOR_TOPICS) ? 'may-hold' : 'bloom'
  }

  function disprove(found: Log, header: HeadHeader): void {
    if (bloomsDisproved) return
    bloomsDisproved = true
    rereadFrom = lowestSkippedByBloom
    const reread =
      rereadFrom === undefined
        ? 'no block was skipped by its bloom before'
        : `the blocks skipped by their blooms are read again from block ${rereadFrom} on`
    log?.warn(
      {
        chainId: reader.chainId,
        blockNumber: header.number,
        blockHash: header.hash,
        txHash: found.transactionHash,
        rereadFrom,
      },
      `the logsBloom of block ${header.number} of chain ${reader.chainId ?? '?'} does not hold a ` +
        `log eth_getLogs answered for it, so this chain's blooms cannot be trusted: the listener no ` +
        `longer skips blocks by their blooms and reads the logs of every block that holds a ` +
        `transaction (more eth_getLogs calls; ${reread}). To skip again, point RPC_URL (or the ` +
        `chain's endpoints in CHAINS_FILE) at a node that serves its headers' real blooms, and restart`,
    )
  }

  return {
    mayHoldLogs(head, from, to) {
      const addresses = operators()
      // No Operator: readLogs reads nothing either.
      if (addresses.length === 0) return false
      let firstByBloom: number | undefined
      for (let number = from; number <= to; number++) {
        const verdict = verdictOf(reader.knownCanonicalHeader(head, number), addresses)
        if (verdict === 'may-hold') return true
        if (verdict === 'bloom') firstByBloom ??= number
      }
      if (firstByBloom !== undefined)
        lowestSkippedByBloom = Math.min(lowestSkippedByBloom ?? firstByBloom, firstByBloom)
      return false
    },
    checkLogs(head, logs) {
      for (const found of logs) {
        const header = reader.knownCanonicalHeader(head, found.blockNumber)
        // Another block at that height (the chain moved since the head was read) says nothing.
        if (header?.logsBloom === undefined || header.hash !== found.blockHash) continue
        const topic0 = found.topics[0]
        if (topic0 === undefined || !bloomMayHoldLog(header.logsBloom, [found.address], [topic0]))
          disprove(found, header)
      }
    },
    takeRereadFrom() {
      const from = rereadFrom
      rereadFrom = undefined
      return from
    },
  }
}
