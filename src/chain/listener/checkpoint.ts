import type { ChainableCommander, Redis } from 'ioredis'
import type { ChainReader, HeadRef } from './chain-reader.ts'

/** The last block whose logs are all settled, with its hash (to notice a reorg under it). */
export interface Checkpoint {
  number: number
  hash: string | null
}

/**
 * The listener's checkpoint (number and hash), kept in Redis so a restarted listener knows where to
 * backfill from; moved back when its block is no longer on the chain.
 */
export class CheckpointKeeper {
  private value: Checkpoint | undefined
  private stored = false
  private rewindPending: number | undefined

  constructor(
    private readonly redis: Redis,
    private readonly key: () => string,
    private readonly reader: ChainReader,
    private readonly fromBlock: number | undefined,
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
      this.stored = false
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
    return this.value
  }

  /**
   * Moves the checkpoint to the block before `number` when the next scan starts. A scan already under
   * way when this is asked does not advance the checkpoint past the rewind when it ends.
   */
  requestRewind(number: number): void {
    this.rewindPending = Math.min(this.rewindPending ?? number, number)
  }

  /** Sets the checkpoint to `number` and adds its write to `writes` (when it moved or was never stored). */
  async advance(number: number, head: HeadRef, writes: ChainableCommander): Promise<void> {
    if (this.rewindPending !== undefined) return
    if (number === this.value?.number && this.stored) return
    const hash = number >= 0 ? await this.reader.canonicalHash(head, number) : null
    this.value = { number, hash }
    writes.set(this.key(), JSON.stringify(this.value))
    this.stored = true
  }

  private async load(head: number): Promise<Checkpoint> {
    const stored = await this.redis.get(this.key())
    if (stored) {
      this.stored = true
      return JSON.parse(stored) as Checkpoint
    }
    const start = this.fromBlock ?? head + 1
    const number = Math.min(start, head + 1) - 1
    return { number, hash: await this.hashAt(number) }
  }

  private async hashAt(number: number): Promise<string | null> {
    return number >= 0 ? await this.reader.blockHash(number) : null
  }
}
