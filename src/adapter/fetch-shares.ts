/**
 * Fair shares of the fetch queues between the adapter's clients (one client with 300
 * requests in flight made another's request wait 6.7 s instead of 0.7 s, behind all of them, at the
 * family's rate limit). Each fetch job is queued with a BullMQ priority (lower runs first) that grows
 * with how many fetches its client already has in flight: a client's first request goes ahead of
 * another client's three-hundredth. Nothing is refused and no throughput is lost: a single busy
 * client (a runner, a Chainlink node) has the queue to itself as before.
 *
 * Within one client the order stays first come, first served: a request never gets a lower number
 * than one of its client's requests still in flight (BullMQ runs equal priorities in the order they
 * were added). When a client has nothing in flight its next request starts again from 1.
 *
 * A client is what client-identity.ts says: its address, or behind a trusted proxy the address the
 * proxy forwarded for (per adapter process; each replica keeps its own shares, and priorities from
 * several replicas mean the same: how busy the client is).
 */

/** BullMQ's lowest priority. */
const MAX_PRIORITY = 2 ** 21

export interface FetchShare {
  /** The BullMQ priority of this request's fetch job. */
  readonly priority: number
  /** The request has its answer (or gave up): its client has one fetch fewer in flight. */
  leave(): void
}

interface ClientFlight {
  /** Fetches in flight by their priority. */
  byPriority: Map<number, number>
  count: number
  highest: number
}

export class FetchShares {
  private readonly clients = new Map<string, ClientFlight>()

  enter(client: string): FetchShare {
    let flight = this.clients.get(client)
    if (!flight) {
      flight = { byPriority: new Map(), count: 0, highest: 0 }
      this.clients.set(client, flight)
    }
    const priority = Math.min(MAX_PRIORITY, Math.max(flight.count + 1, flight.highest))
    flight.byPriority.set(priority, (flight.byPriority.get(priority) ?? 0) + 1)
    flight.count++
    flight.highest = Math.max(flight.highest, priority)
    let left = false
    const current = flight
    return {
      priority,
      leave: () => {
        if (left) return
        left = true
        this.leave(client, current, priority)
      },
    }
  }

  /** Clients with fetches in flight (what the map holds: nothing for a client that is done). */
  get clientCount(): number {
    return this.clients.size
  }

  private leave(client: string, flight: ClientFlight, priority: number): void {
    const remaining = (flight.byPriority.get(priority) ?? 1) - 1
    if (remaining > 0) flight.byPriority.set(priority, remaining)
    else flight.byPriority.delete(priority)
    flight.count--
    if (flight.count === 0) {
      this.clients.delete(client)
      return
    }
    if (priority === flight.highest && remaining === 0)
      flight.highest = Math.max(0, ...flight.byPriority.keys())
  }
}
