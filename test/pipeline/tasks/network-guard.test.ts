import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { networkInterfaces } from 'node:os'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SPECIAL_RANGES, specialRangeOf } from '../../../src/net/special-addresses.ts'
import { TaskError } from '../../../src/pipeline/index.ts'
import {
  addressRefusal,
  isRestrictedAddress,
  type HostResolver,
} from '../../../src/pipeline/tasks/address-guard.ts'
import { exchange } from '../../../src/pipeline/tasks/http-client.ts'
import { sampleOf, urlHost } from '../../net/ranges.ts'
import { runTask } from '../support/task.ts'

/**
 * Issue 38, point 4: the http task's guard refuses, at connect time, every range of IANA's IPv4 and
 * IPv6 special-purpose registries (one test per row, and the five ranges beyond them), and every
 * address of this host's interfaces. A server listens on every interface meanwhile: it is never hit.
 */
let server: Server
let port = 0
let hits = 0

beforeAll(async () => {
  server = createServer((_request, response) => {
    hits++
    response.end('{"reached":true}')
  })
  // Every interface, both families: whatever the guard lets through would be answered.
  await new Promise<void>((resolve) => server.listen(0, '::', resolve))
  port = (server.address() as AddressInfo).port
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

async function refusal(url: string, resolveHost?: HostResolver): Promise<string> {
  const before = hits
  const error = await runTask(
    'http',
    { method: 'GET', url: '$(req.url)' },
    { vars: { req: { url } }, ...(resolveHost ? { context: { resolveHost } } : {}) },
  ).then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(hits, url).toBe(before)
  expect(error, url).toBeInstanceOf(TaskError)
  return (error as TaskError).message
}

describe('every row of the special-purpose registries is refused at connect time', () => {
  it('holds every row of both registries: 26 IPv4 prefixes (25 records), 25 IPv6, 5 beyond', () => {
    const count = (registry: string) =>
      SPECIAL_RANGES.filter((range) => range.registry === registry).length
    expect([count('IANA IPv4'), count('IANA IPv6'), count('beyond the registries')]).toEqual([
      26, 25, 5,
    ])
  })

  for (const range of SPECIAL_RANGES) {
    it(`${range.prefix} ${range.name} (${range.registry})`, async () => {
      const address = sampleOf(range.prefix)
      expect(specialRangeOf(address)).toEqual(range)
      const named = `a special-purpose address (${range.prefix} ${range.name}, ${range.rfc})`
      // As a literal in the URL (net makes no lookup for one: the connector checks it) ...
      expect(await refusal(`http://${urlHost(address)}:${port}/metrics`)).toContain(
        `${address} is ${named}`,
      )
      // ... and as what a name resolves to.
      const resolveHost: HostResolver = async () => [
        { address, family: address.includes(':') ? 6 : 4 },
      ]
      expect(await refusal(`http://row.test:${port}/metrics`, resolveHost)).toContain(
        `row.test resolves to ${address}, ${named}`,
      )
    })
  }

  it('lets the public neighbours of the ranges through', () => {
    const none = () => []
    for (const address of [
      '8.8.8.8',
      '11.0.0.0',
      '100.128.0.0',
      '172.32.0.1',
      '192.0.1.1',
      '192.88.98.255',
      '198.20.0.1',
      '223.255.255.255',
      '2606:4700:4700::1111',
      '2001:200::1',
      '2003::1',
      '2620:4f:8001::1',
      '3fff:1000::1',
    ])
      expect(addressRefusal(address, none), address).toBeUndefined()
  })
})

describe("every address of this host's interfaces is refused at connect time", () => {
  const own = Object.entries(networkInterfaces()).flatMap(([name, entries]) =>
    (entries ?? []).map((entry) => ({ name, address: entry.address })),
  )

  it('each interface address, though a server listens on it', async () => {
    expect(own.length).toBeGreaterThan(0)
    for (const { address } of own) {
      const message = await refusal(`http://${urlHost(address)}:${port}/metrics`)
      expect(message).toMatch(/is (a special-purpose address|an address of this host)/)
    }
    // The server does answer on them: allowed explicitly, loopback is reached.
    const reached = await runTask(
      'http',
      { method: 'GET', url: '$(req.url)', allowUnrestrictedNetworkAccess: 'true' },
      { vars: { req: { url: `http://127.0.0.1:${port}/metrics` } } },
    )
    expect(JSON.parse(reached as string)).toEqual({ reached: true })
  })

  it('an address no registry names is refused for being this host’s, literal or resolved', async () => {
    const hostAddresses = () => [{ address: '8.8.8.8', interface: 'wan0' }]
    expect(addressRefusal('8.8.8.8', hostAddresses)).toBe(
      'an address of this host (interface wan0)',
    )
    expect(addressRefusal('8.8.4.4', hostAddresses)).toBeUndefined()
    const attempt = (url: string, resolve?: HostResolver) =>
      exchange({
        method: 'GET',
        url,
        headers: {},
        signal: AbortSignal.timeout(5_000),
        cap: { maxBytes: 1024, source: 'test' },
        guard: { hostAddresses, ...(resolve ? { resolve } : {}) },
      }).then(
        () => 'connected',
        (error: unknown) => (error as Error).message,
      )
    expect(await attempt(`http://8.8.8.8:${port}/`)).toBe(
      'url: 8.8.8.8 is an address of this host (interface wan0); a URL from a variable may not reach it unless allowUnrestrictedNetworkAccess="true"',
    )
    expect(
      await attempt(`http://self.test:${port}/`, async () => [{ address: '8.8.8.8', family: 4 }]),
    ).toContain('self.test resolves to 8.8.8.8, an address of this host (interface wan0)')
    expect(isRestrictedAddress('8.8.8.8', () => [])).toBe(false)
  })
})
