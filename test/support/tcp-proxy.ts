import { createServer, connect, type Server, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'

/** A TCP proxy on loopback in front of a service, which a test can cut and restore. */
export interface TcpProxy {
  readonly port: number
  /** `http://127.0.0.1:<port>`, for an HTTP service behind it. */
  readonly url: string
  /** Ends every open connection at once (reset) and refuses new ones until `restore`. */
  cut(): void
  restore(): void
  /** Forwards new connections to `port` from now on and resets the open ones (a failover behind one address). */
  retarget(port: number): void
  readonly isCut: boolean
  /** Connections refused while cut. */
  readonly refused: number
  close(): Promise<void>
}

/**
 * Starts a proxy on a free loopback port forwarding to `targetPort` on 127.0.0.1. While cut, the
 * listening socket stays open (the port is not given away) but every connection is reset as soon as
 * it arrives, as a node behind a dead link or a stopped process looks to a client.
 */
export async function startTcpProxy(
  targetPort: number,
  targetHost = '127.0.0.1',
): Promise<TcpProxy> {
  const open = new Set<Socket>()
  let cut = false
  let refused = 0
  let target = targetPort
  const server: Server = createServer((client) => {
    if (cut) {
      refused++
      client.resetAndDestroy()
      return
    }
    const upstream = connect(target, targetHost)
    open.add(client)
    open.add(upstream)
    const end = () => {
      client.destroy()
      upstream.destroy()
      open.delete(client)
      open.delete(upstream)
    }
    client.on('error', end).on('close', end)
    upstream.on('error', end).on('close', end)
    client.pipe(upstream)
    upstream.pipe(client)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    cut() {
      cut = true
      for (const socket of open) socket.resetAndDestroy()
      open.clear()
    },
    restore() {
      cut = false
    },
    retarget(port: number) {
      target = port
      for (const socket of open) socket.resetAndDestroy()
      open.clear()
    },
    get isCut() {
      return cut
    },
    get refused() {
      return refused
    },
    close() {
      for (const socket of open) socket.destroy()
      return new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
