import type { Redis } from 'ioredis'
import { luaScriptFile } from '../../../queue/lua-script.ts'

const ACQUIRE = luaScriptFile(new URL('./acquire-key.lua', import.meta.url), {
  keys: ['owner', 'epoch'],
  args: ['process', 'lease_ms'],
})
const RENEW = luaScriptFile(new URL('./renew-key.lua', import.meta.url), {
  keys: ['owner'],
  args: ['fence', 'lease_ms'],
})
const RELEASE = luaScriptFile(new URL('./release-key.lua', import.meta.url), {
  keys: ['owner'],
  args: ['fence'],
})
const HEARTBEAT = luaScriptFile(new URL('./heartbeat.lua', import.meta.url), {
  keys: ['members'],
  args: ['process', 'lease_ms'],
})

/** What the leases tell the key senders, and ask them. */
export interface KeyOwner {
  /** This process now owns the key, under this fence: recover it and start sending. */
  acquired(address: string, fence: string): void
  /** The key is not ours any more (expired and taken, or Redis lost it): hand its waiters over. */
  lost(address: string): void
  /** This process owns more than its share (true): stop giving the key new work; false: give it again. */
  drain(address: string, draining: boolean): void
  /** Nothing of the key's is in flight here: it may be handed to another process. */
  idle(address: string): boolean
}

export interface KeyLeaseOptions {
  /** `<prefix>:txstate:<chain id>`: the chain's sender state, under the prefix's hash tag. */
  base: string
  addresses: readonly string[]
  /** How long a lease lasts unrenewed: a dead owner's keys are taken over after about this long. */
  leaseMs: number
  /** This process, in the fences it writes. */
  process: string
}

/** Where a key's lease lives. */
export function ownerKey(base: string, address: string): string {
  return `${base}:${address.toLowerCase()}:owner`
}

/**
 * One owner per sender key, as Chainlink's broadcaster runs one loop per address: a lease in Redis
 * that expires by Redis's clock, renewed every third of its length. Every process that sends keeps
 * a heartbeat among the chain's live senders and takes free keys up to its share (the keys divided by
 * the live senders, rounded up); a process that owns more than its share drains a surplus key and
 * lets go of it once nothing of it is in flight, so a newcomer gets its share without a restart. A
 * lease that could not be renewed is lost: counted, and handed over.
 */
export class KeyLeases {
  /** Address (as configured) -> the fence this process holds it under. */
  readonly owned = new Map<string, string>()
  /** Leases this process found gone or taken when it renewed them. */
  lostCount = 0
  private timer: NodeJS.Timeout | undefined
  private ticking: Promise<void> | undefined
  private stopped = false

  constructor(
    private readonly redis: Redis,
    private readonly options: KeyLeaseOptions,
    private readonly owner: KeyOwner,
  ) {}

  /** Renews, takes and lets go now, then every third of a lease. */
  async start(): Promise<void> {
    await this.tick()
    const every = Math.max(50, Math.floor(this.options.leaseMs / 3))
    this.timer = setInterval(() => {
      this.ticking ??= this.tick()
        .catch(() => undefined)
        .finally(() => (this.ticking = undefined))
    }, every)
    this.timer.unref()
  }

  /** Stops renewing; the keys still owned are released (the caller handed their work over first). */
  async stop(): Promise<void> {
    this.stopped = true
    clearInterval(this.timer)
    await this.ticking
    await Promise.all([...this.owned.keys()].map((address) => this.release(address)))
  }

  /** Lets go of one key this process owns. */
  async release(address: string): Promise<void> {
    const fence = this.owned.get(address)
    if (fence === undefined) return
    this.owned.delete(address)
    await RELEASE.run(this.redis, { owner: ownerKey(this.options.base, address) }, { fence }).catch(
      () => undefined,
    )
  }

  /** One round: heartbeat, renewals, then keys taken or let go to move toward this process's share. */
  async tick(): Promise<void> {
    const { base, addresses, leaseMs, process } = this.options
    const live = Number(
      await HEARTBEAT.run(
        this.redis,
        { members: `${base}:senders` },
        { process, lease_ms: leaseMs },
      ),
    )
    for (const [address, fence] of [...this.owned]) {
      const renewed = await RENEW.run(
        this.redis,
        { owner: ownerKey(base, address) },
        { fence, lease_ms: leaseMs },
      )
      if (Number(renewed) === 1 || this.owned.get(address) !== fence) continue
      this.owned.delete(address)
      this.lostCount += 1
      this.owner.lost(address)
    }
    if (this.stopped) return
    const share = Math.ceil(addresses.length / Math.max(1, live))
    for (const address of addresses) {
      if (this.owned.size >= share) break
      if (this.owned.has(address)) continue
      const fence = await ACQUIRE.run(
        this.redis,
        { owner: ownerKey(base, address), epoch: `${ownerKey(base, address)}:epoch` },
        { process, lease_ms: leaseMs },
      )
      if (typeof fence !== 'string' || this.stopped) continue
      this.owned.set(address, fence)
      this.owner.acquired(address, fence)
    }
    await this.letGoOfSurplus(share)
  }

  /** Keys beyond the share are drained, and released once idle (another process takes them). */
  private async letGoOfSurplus(share: number): Promise<void> {
    const owned = [...this.owned.keys()]
    for (const address of owned.slice(0, share)) this.owner.drain(address, false)
    for (const address of owned.slice(share)) {
      this.owner.drain(address, true)
      if (!this.owner.idle(address)) continue
      this.owner.lost(address)
      await this.release(address)
    }
  }
}
