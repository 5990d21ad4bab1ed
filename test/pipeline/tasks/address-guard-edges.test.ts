import { describe, expect, it } from 'vitest'
import { TaskError } from '../../../src/pipeline/index.ts'
import {
  addressRefusal,
  guardedDispatcher,
  guardedLookup,
  isRestrictedAddress,
  RestrictedAddressError,
  UnresolvableHostError,
  type HostAddresses,
  type HostResolver,
} from '../../../src/pipeline/tasks/address-guard.ts'
import { runTask } from '../support/task.ts'

// The guard's edges: what is not an address at all, what a refusal carries for the run record (its
// kind, its name, the host and the address), a name that resolves to nothing, and the keep-alive
// pools it keeps per resolver.

/** The error a run of `url` (from a variable, so guarded at every hop) fails with. */
async function failure(url: string, resolveHost: HostResolver): Promise<TaskError> {
  const error = await runTask(
    'http',
    { method: 'GET', url: '$(req.url)' },
    { vars: { req: { url } }, context: { resolveHost } },
  ).then(
    () => undefined,
    (caught: unknown) => caught,
  )
  expect(error, url).toBeInstanceOf(TaskError)
  return error as TaskError
}

describe('addressRefusal', () => {
  it('refuses what is not an IP address, saying so', () => {
    for (const text of ['localhost', 'example.com', '', '1.2.3', '::g'])
      expect(
        addressRefusal(text, () => []),
        text,
      ).toBe('not an IP address')
    expect(isRestrictedAddress('localhost', () => [])).toBe(true)
  })

  it('lets a public address through', () => {
    expect(addressRefusal('8.8.8.8', () => [])).toBeUndefined()
    expect(isRestrictedAddress('8.8.8.8', () => [])).toBe(false)
  })
})

describe('a refused connection, as the run records it', () => {
  it('an inward address a name resolves to: bad input, naming host, address and why', async () => {
    const resolveHost: HostResolver = async () => [{ address: '127.0.0.1', family: 4 }]
    const error = await failure('http://inward.test:1/x', resolveHost)
    expect(error.kind).toBe('bad_input')
    const cause = error.cause as RestrictedAddressError
    expect(cause).toBeInstanceOf(RestrictedAddressError)
    expect(cause).toMatchObject({
      name: 'RestrictedAddressError',
      kind: 'bad_input',
      code: 'ERR_RESTRICTED_ADDRESS',
      host: 'inward.test',
      address: '127.0.0.1',
    })
    expect(cause.message).toBe(`inward.test resolves to 127.0.0.1, ${cause.reason}`)
    expect(cause.reason).toMatch(/^a special-purpose address \(127\.0\.0\.0\/8 /)
    expect(cause.retryable).toBe(false)
  })

  it('a bracketed IPv6 literal is checked without its brackets', async () => {
    const error = await failure('http://[::1]:1/x', async () => [])
    const cause = error.cause as RestrictedAddressError
    expect(cause).toBeInstanceOf(RestrictedAddressError)
    expect(cause).toMatchObject({ host: '::1', address: '::1', name: 'RestrictedAddressError' })
    expect(cause.message).toBe(`::1 is ${cause.reason}`)
  })

  it('one inward address among public ones refuses the whole answer', async () => {
    const resolveHost: HostResolver = async () => [
      { address: '8.8.8.8', family: 4 },
      { address: '10.0.0.1', family: 4 },
    ]
    const error = await failure('http://mixed.test:1/x', resolveHost)
    expect(error.cause).toMatchObject({ host: 'mixed.test', address: '10.0.0.1' })
  })
})

describe('a name that does not resolve', () => {
  for (const [what, resolveHost] of [
    ['the resolver fails', (async () => Promise.reject(new Error('ENOTFOUND'))) as HostResolver],
    ['the resolver answers no address', (async () => []) as HostResolver],
  ] as const)
    it(`${what}: bad input, "cannot resolve" and the host`, async () => {
      const error = await failure('http://nowhere.test:1/x', resolveHost)
      expect(error.message).toBe('url: cannot resolve nowhere.test')
      expect(error.kind).toBe('bad_input')
      const cause = error.cause as UnresolvableHostError
      expect(cause).toBeInstanceOf(UnresolvableHostError)
      expect(cause).toMatchObject({
        name: 'UnresolvableHostError',
        kind: 'bad_input',
        code: 'ERR_UNRESOLVABLE_HOST',
        host: 'nowhere.test',
      })
    })
})

describe('guardedDispatcher', () => {
  it('keeps one pool per resolver and host-address source, and reuses it', () => {
    const resolve: HostResolver = async () => []
    const other: HostResolver = async () => []
    const none: HostAddresses = () => []
    const some: HostAddresses = () => []
    const first = guardedDispatcher(resolve, none)
    expect(guardedDispatcher(resolve, none)).toBe(first)
    expect(guardedDispatcher(resolve, some)).not.toBe(first)
    expect(guardedDispatcher(resolve, some)).toBe(guardedDispatcher(resolve, some))
    expect(guardedDispatcher(other, none)).not.toBe(first)
    expect(guardedDispatcher()).toBe(guardedDispatcher())
  })
})

// net's lookup contract: asked with `all` (as its family auto-selection always asks), the answer is
// the list of addresses; asked without, one address and its family. A single address given to a
// caller that asked for all fails the connection with ERR_INVALID_IP_ADDRESS.
describe('guardedLookup, for a name with public addresses', () => {
  const publicAddresses: HostResolver = async () => [
    { address: '93.184.215.14', family: 4 },
    { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
  ]
  const lookup = guardedLookup(publicAddresses, () => [])
  const answer = (options: { all?: boolean; family?: number }) =>
    new Promise<unknown[]>((resolve) =>
      lookup('feed.example', options as never, (...args: unknown[]) => resolve(args)),
    )

  it('answers a lookup for every address with the list, each with its family', async () => {
    expect(await answer({ all: true })).toEqual([
      null,
      [
        { address: '93.184.215.14', family: 4 },
        { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
      ],
    ])
  })

  it('answers a lookup for one address with the first of the family asked for', async () => {
    expect(await answer({})).toEqual([null, '93.184.215.14', 4])
    expect(await answer({ family: 6 })).toEqual([null, '2606:2800:21f:cb07:6820:80da:af6b:8b2c', 6])
  })
})
