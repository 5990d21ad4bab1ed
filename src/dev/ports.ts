import { createServer } from 'node:net'

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      server.close(() =>
        typeof address === 'object' && address
          ? resolvePort(address.port)
          : reject(new Error('no port')),
      )
    })
  })
}

/** True when nothing listens on 127.0.0.1:`port`. */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolveFree) => {
    const server = createServer()
    server.once('error', () => resolveFree(false))
    server.listen(port, '127.0.0.1', () => server.close(() => resolveFree(true)))
  })
}
/**
 * Starts a part on its preferred (well-known) port when that is free, else on any free port. Another
 * process may take the port between the check and the start (two stacks starting at once): then the
 * part starts on a free port too; a start that fails for another reason fails again there, and throws.
 */
export async function onPreferredPort<T>(
  preferred: number | undefined,
  start: (port: number) => Promise<T>,
): Promise<T> {
  if (preferred !== undefined && (await isPortFree(preferred))) {
    try {
      return await start(preferred)
    } catch {
      // taken meanwhile: fall through to a free port
    }
  }
  return start(await freePort())
}
