import type { Redis } from 'ioredis'
import type { OutageLog } from '../config/dependency-health.ts'
import { luaScriptFile } from './lua-script.ts'

const READ_TIME = luaScriptFile(new URL('./redis-clock.lua', import.meta.url), {
  keys: ['slot'],
  args: [],
})

/** How often the clock reads Redis's TIME again: the monotonic clock it runs on drifts a little. */
const RESYNC_MS = 60_000

/** A reading of Redis's TIME and when it was taken on this process's monotonic clock. */
interface Anchor {
  redisMs: number
  monotonicMs: number
  /** The host's wall clock at the reading, for hostOffsetMs. */
  wallMs: number
}

/**
 * How far a host's wall clock may be from Redis's before the process says so. BullMQ times retries
 * and delayed jobs by the wall clock of the process that schedules them and of the one that takes
 * them, so a skew of this much already shifts a first retry (1 s for runs, 200 ms for fetches).
 */
const HOST_CLOCK_TOLERANCE_MS = 1_000

export interface RedisClockOptions {
  /** The key whose node answers (QUEUE_PREFIX's slot in a Redis Cluster). */
  slotKey: string
  /** performance.now() unless a test says otherwise. */
  monotonic?: () => number
  wall?: () => number
  /** Where it says that the host's wall clock is off, and when it is right again. */
  log?: OutageLog
}

/**
 * Redis's clock as one process reads it: the time every process of an installation agrees on (its
 * locks and leases expire by it), for times one process writes and another compares, such as when a
 * fetch finished (fetch-queue.ts). A host's wall clock may be minutes off; this clock reads Redis's
 * TIME (once a minute, and whenever the connection is ready again) and runs on the monotonic clock
 * in between, so a wall clock that drifts or steps does not move it. The reading is placed halfway
 * through its round trip, so it is off by at most half of one (milliseconds on a LAN).
 *
 * `now()` is undefined until Redis first answered: a caller then treats what it would compare as
 * of unknown age.
 */
export class RedisClock {
  private anchor: Anchor | undefined
  private timer: NodeJS.Timeout | undefined
  private readonly onReady = () => void this.sync()
  /** Whether the last reading found the host's wall clock off by more than the tolerance. */
  private skewed = false
  private readonly monotonic: () => number
  private readonly wall: () => number

  constructor(
    private readonly redis: Redis,
    private readonly options: RedisClockOptions,
  ) {
    this.monotonic = options.monotonic ?? (() => performance.now())
    this.wall = options.wall ?? Date.now
  }

  /** Redis's time now, epoch milliseconds; undefined before the first reading. */
  now(): number | undefined {
    const anchor = this.anchor
    return anchor ? anchor.redisMs + (this.monotonic() - anchor.monotonicMs) : undefined
  }

  /** How far this host's wall clock is ahead of Redis's (negative: behind), at the last reading. */
  hostOffsetMs(): number | undefined {
    const anchor = this.anchor
    return anchor ? Math.round(anchor.wallMs - anchor.redisMs) : undefined
  }

  /**
   * Reads Redis's TIME once; answers whether it did. A Redis that does not answer leaves the last
   * reading in place (its outage is reported by the connection, not here).
   */
  async sync(): Promise<boolean> {
    const before = this.monotonic()
    let answer: unknown
    try {
      answer = await READ_TIME.run(this.redis, { slot: this.options.slotKey }, {})
    } catch {
      return false
    }
    const after = this.monotonic()
    const [seconds, micros] = Array.isArray(answer) ? answer.map(Number) : []
    if (!Number.isFinite(seconds) || !Number.isFinite(micros)) return false
    const monotonicMs = (before + after) / 2
    this.anchor = {
      redisMs: seconds! * 1_000 + micros! / 1_000,
      monotonicMs,
      wallMs: this.wall() - (after - monotonicMs),
    }
    this.reportSkew()
    return true
  }

  /** One line when the host's wall clock goes off by more than the tolerance, one when it is back. */
  private reportSkew(): void {
    const offsetMs = this.hostOffsetMs()
    if (offsetMs === undefined || !this.options.log) return
    const skewed = Math.abs(offsetMs) > HOST_CLOCK_TOLERANCE_MS
    if (skewed === this.skewed) return
    this.skewed = skewed
    const seconds = Math.abs(offsetMs / 1_000).toFixed(1)
    if (skewed)
      this.options.log.warn(
        { hostClockOffsetMs: offsetMs },
        `this host's clock is ${seconds} s ${offsetMs > 0 ? 'ahead of' : 'behind'} Redis's: ` +
          `ownership and fetch ages go by Redis's clock, but BullMQ times retries by each host's ` +
          `clock, so retries scheduled or taken here run up to ${seconds} s early or late; ` +
          `synchronise this host's clock (chrony or systemd-timesyncd)`,
      )
    else
      this.options.log.info(
        { hostClockOffsetMs: offsetMs },
        `this host's clock agrees with Redis's again (${seconds} s apart)`,
      )
  }

  /** Reads now, whenever the connection is ready again, and every resync interval until stop(). */
  start(): this {
    this.redis.on('ready', this.onReady)
    this.timer = setInterval(this.onReady, RESYNC_MS)
    this.timer.unref()
    this.onReady()
    return this
  }

  stop(): void {
    clearInterval(this.timer)
    this.timer = undefined
    this.redis.off('ready', this.onReady)
  }
}
