import { isIP } from 'node:net'

/** An address only this machine reaches: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase()
  if (bare === 'localhost' || bare === '::1') return true
  if (bare.startsWith('::ffff:')) return isLoopbackHost(bare.slice('::ffff:'.length))
  return isIP(bare) === 4 && bare.startsWith('127.')
}

/** `0.0.0.0` and `::`: a server bound there answers on every interface of the host. */
export function isEveryInterface(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '')
  return bare === '0.0.0.0' || /^[0:]+$/.test(bare)
}

/** Where a server bound to `host` listens, and the URL a process on this host reaches it at. */
export interface ListenAddress {
  /** `http://0.0.0.0:8080`, `http://[::]:8080`, `http://127.0.0.1:8080`: the address it is bound to. */
  listening: string
  /** `http://127.0.0.1:8080` for a server on every interface, else the bound address itself. */
  url: string
  /** Whether only this machine reaches it. */
  loopback: boolean
}

export function listenAddress(host: string, port: number): ListenAddress {
  const bare = host.replace(/^\[|\]$/g, '')
  const shown = isIP(bare) === 6 ? `[${bare}]` : bare
  const listening = `http://${shown}:${port}`
  return {
    listening,
    url: isEveryInterface(bare) ? `http://127.0.0.1:${port}` : listening,
    loopback: isLoopbackHost(bare),
  }
}
