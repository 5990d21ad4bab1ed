import { setTimeout as delay } from 'node:timers/promises'
import type { ChainableCommander, Redis } from 'ioredis'
import type { ChainReader, HeadRef } from './chain-reader.ts'

/** The last block whose logs are all settled, with its hash (to notice a reorg under it). */
export interface Checkpoint {
  number: number
  hash: string | null
}

/**
 * How far the checkpoint in memory may run ahead of the one stored before it is stored again. A
 * restarted listener reads again at most these blocks (the consumed markers keep their requests from
 * coming twice), and a listener writes once in so many blocks, not once a block: on an automining
 * chain that was two writes a request.
 */
export const CHECKPOINT_STORE_EVERY_BLOCKS = 32

/** How long a stopping listener waits for its last checkpoint write: Redis may be away. */
const FLUSH_WAIT_MS = 2_000

/**
 * The listener's checkpoint (number and hash), kept in Redis so a restarted listener knows where to
 * backfill from; moved back when its block is no longer on the chain. The one stored never passes the
 * one in memory: a move back is stored at once, a move up once it is CHECKPOINT_STORE_EVERY_BLOCKS
 * ahead, and the last one when the listener stops.
 */
export class CheckpointKeeper {
  private value: Checkpoint | undefined
  /** The number stored in Redis, as far as this process knows (undefined: nothing stored yet). */
  private storedNumber: number | undefined
  private rewindPending: number | undefined

  constructor(
    private readonly redis: Redis,
    private readonly key: () => string,
    private readonly reader: ChainReader,
    private readonly fromBlock: number | (() => Promise<number>) | undefined,
    private readonly rewindDepth: number,
    /** Told each time the checkpoint's block is no longer on the chain (a reorg). */
    private readonly onReorg: () => void = () => undefined,
  ) {}

  get current(): Checkpoint | undefined {
    return this.value
  }

  /** The stored checkpoint, else the block before `fromBlock` (default: the head, only new requests). */
  async ensureLoaded(head: number): Promise<Checkpoint> {
    this.value ??= await this.load(head)
    return this.value
  }

  /** Moves the checkpoint back when its block is no longer on the chain (a reorg or a reset chain). */
  async checkForReorg(head: HeadRef): Promise<Checkpoint> {
    if (this.rewindPending !== undefined) {
      const before = Math.max(-1, Math.min(this.rewindPending, head.number + 1) - 1)
      this.rewindPending = undefined
      this.value = { number: before, hash: await this.hashAt(before) }
      // Stored by the next advance, whatever its distance: the blocks after it are read again.
      this.storedNumber = undefined
    }
    const current = await this.ensureLoaded(head.number)
    if (current.number < 0) return current
    const canonical =
      this.reader.knownCanonicalHash(head, current.number) ??
      (current.number < head.number ? await this.reader.blockHash(current.number) : null)
    if (canonical !== null && canonical === current.hash) return current
    this.onReorg()
    const number = Math.max(-1, Math.min(current.number, head.number) - this.rewindDepth)
    this.value = { number, hash: await this.hashAt(number) }
    // The stored checkpoint names a block no longer on the chain: the next advance replaces it, so a
    // restarted listener does not count the same reorg again.
    this.storedNumber = undefined
    return this.value
  }

  /**
   * Moves the checkpoint to the block before `number` when the next scan starts. A scan already under
   * way when this is asked does not advance the checkpoint past the rewind when it ends.
   */
  requestRewind(number: number): void {
    this.rewindPending = Math.min(this.rewindPending ?? number, number)
  }

  /**
   * Sets the checkpoint to `number`, and adds its write to `writes` when the stored one is ahead of it
   * (a reorg or a rewind moved it back), CHECKPOINT_STORE_EVERY_BLOCKS behind it, or none.
   */
  async advance(number: number, head: HeadRef, writes: ChainableCommander): Promise<void> {
    if (this.rewindPending !== undefined) return
    if (number !== this.value?.number) {
      const hash = number >= 0 ? await this.reader.canonicalHash(head, number) : null
      this.value = { number, hash }
    }
    const stored = this.storedNumber
    if (stored === undefined || number < stored || number >= stored + CHECKPOINT_STORE_EVERY_BLOCKS)
      this.store(writes)
  }

  /**
   * Stores the checkpoint in memory when the stored one differs (a listener that stops), unless a
   * rewind waits (the stored one must not pass blocks still to be read again) or Redis is away.
   */
  async flush(): Promise<void> {
    if (this.rewindPending !== undefined || this.redis.status !== 'ready') return
    if (this.value === undefined || this.value.number === this.storedNumber) return
    const writes = this.redis.pipeline()
    this.store(writes)
    // A connection that queues commands while Redis is away would hold the stop until it is back:
    // the next start reads those blocks again instead.
    const written = writes.exec()
    written.catch(() => undefined)
    await Promise.race([written, delay(FLUSH_WAIT_MS, undefined, { ref: false })])
  }

  private store(writes: ChainableCommander): void {
    if (this.value === undefined) return
    writes.set(this.key(), JSON.stringify(this.value))
    this.storedNumber = this.value.number
  }

  private async load(head: number): Promise<Checkpoint> {
    const stored = await this.redis.get(this.key())
    if (stored) {
      const checkpoint = JSON.parse(stored) as Checkpoint
      this.storedNumber = checkpoint.number
      return checkpoint
    }
    const start =
      typeof this.fromBlock === 'function' ? await this.fromBlock() : (this.fromBlock ?? head + 1)
    const number = Math.min(start, head + 1) - 1
    return { number, hash: await this.hashAt(number) }
  }

  private async hashAt(number: number): Promise<string | null> {
    return number >= 0 ? await this.reader.blockHash(number) : null
  }
}
