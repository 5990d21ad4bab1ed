import { readFileSync } from 'node:fs'

/**
 * Local addresses of the sockets listening on `port` (IPv4 and IPv6), from /proc/net/tcp*, as the
 * kernel writes them: `0100007F` is 127.0.0.1, `00000000` every IPv4 interface, 32 zeros every IPv6 one.
 */
export function listeningAddresses(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0')
  return ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((file) =>
    readFileSync(file, 'utf8')
      .split('\n')
      .slice(1)
      .map((line) => line.trim().split(/\s+/))
      // st 0A = LISTEN
      .filter((fields) => fields[1]?.endsWith(`:${hexPort}`) && fields[3] === '0A')
      .map((fields) => fields[1]!.split(':')[0]!),
  )
}

/** 127.0.0.1 as /proc/net/tcp writes it. */
export const LOOPBACK_V4 = '0100007F'
