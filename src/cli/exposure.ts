import type { Settings } from '../config/settings.ts'
import { isEveryInterface } from '../net/listen-address.ts'

/** What one of a process's servers answers, as the exposure warning names it. */
export interface Served {
  /** `http://0.0.0.0:8080`: the address it listens on. */
  listening: string
  loopback: boolean
  /** What it serves there: `POST /`, `/metrics`, ... */
  what: 'adapter' | 'metrics'
}

/**
 * What a process's servers off loopback give anyone who reaches the host, or undefined when nothing
 * is given away: `POST /` answers without a key or a token, and each request's `##signKey` spends
 * the operator's feed key (or a token signed with the node key); /metrics shows the traffic, the
 * queues and the sender keys' balances. An adapter that spends nothing of the operator's (no
 * FEED_API_KEY, static mode: only requests that bring a client key of their own are fetched) is
 * no exposure; the dashboard off loopback is served behind DASHBOARD_TOKEN or not at all.
 */
export function exposureWarning(
  settings: Pick<Settings, 'EA_HOST' | 'FEED_API_KEY' | 'SIGNKEY_MODE'>,
  served: readonly Served[],
): string | undefined {
  const spends =
    settings.SIGNKEY_MODE === 'signed'
      ? 'a token signed with the node key'
      : settings.FEED_API_KEY !== undefined
        ? 'FEED_API_KEY'
        : undefined
  const exposed = served
    .filter((server) => !server.loopback)
    .flatMap((server) => {
      if (server.what === 'metrics')
        return [`/metrics at ${server.listening}/metrics (traffic, queues, sender key balances)`]
      return spends ? [`POST / at ${server.listening}, where each ##signKey spends ${spends}`] : []
    })
  if (exposed.length === 0) return undefined
  return (
    `EA_HOST=${settings.EA_HOST}${isEveryInterface(settings.EA_HOST) ? ' (every interface)' : ''} is not loopback: anyone who reaches this host gets, without a key or a token, ${exposed.join('; ')}. ` +
    'Let only your Chainlink node reach these ports (a firewall, a private network), or set EA_HOST to 127.0.0.1 when it runs on this host (docs/operating.md)'
  )
}
