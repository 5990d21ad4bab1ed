import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TaskError } from '../../../src/pipeline/index.ts'
import {
  MAX_REDIRECTIONS,
  redirectTarget,
  type Hop,
} from '../../../src/pipeline/tasks/redirects.ts'
import { sendJson, startTestServer, type TestServer } from '../support/http-server.ts'
import { runTask, failureOf as failure } from '../support/task.ts'

/**
 * A URL the operator wrote is trusted; where it redirects is not. A third-party API that is
 * compromised answers 302 to the cloud metadata service or to this host: each hop a redirect leads
 * to is checked against the private-address guard, whoever wrote the first URL, unless the task says
 * allowUnrestrictedNetworkAccess="true". A redirect loop is told as a loop.
 */
let api: TestServer

beforeAll(async () => {
  api = await startTestServer((request, response) => {
    const port = new URL(api.url).port
    const go = (location: string) => {
      response.writeHead(302, { location })
      response.end()
    }
    if (request.url === '/to-metadata') return go('http://169.254.169.254/latest/meta-data/')
    if (request.url === '/to-this-host') return go(`http://127.0.0.1:${port}/internal`)
    if (request.url === '/internal') return sendJson(response, 200, { secret: 'internal value' })
    // Two origins (a name and an address of the same server) sending each other round.
    if (request.url === '/ping') return go(`http://localhost:${port}/pong`)
    if (request.url === '/pong') return go(`http://127.0.0.1:${port}/ping`)
    // A chain of exactly MAX_REDIRECTIONS redirects: /hop/0 -> /hop/1 -> ... -> /hop/20.
    const hop = /^\/hop\/(\d+)$/.exec(request.url)
    if (hop && Number(hop[1]) < MAX_REDIRECTIONS) return go(`/hop/${Number(hop[1]) + 1}`)
    if (hop) return sendJson(response, 200, { reached: request.url })
    sendJson(response, 404, {})
  })
})
afterAll(async () => api?.close())

describe('a redirect from a URL the operator wrote', () => {
  it('to the cloud metadata service is refused, naming the range', async () => {
    const error = await failure(runTask('http', { method: 'GET', url: `${api.url}/to-metadata` }))
    expect(error.message).toContain(
      'redirected to http://169.254.169.254/latest/meta-data/: 169.254.169.254 is a special-purpose address (169.254.0.0/16 Link Local',
    )
    expect(error.message).toContain(
      'a redirect may not reach it unless allowUnrestrictedNetworkAccess="true"',
    )
    expect(error.kind).toBe('bad_input')
    expect(error.retryable).toBe(false)
  })

  it("to this host's own address is refused, and nothing there is asked", async () => {
    const asked = api.requests.length
    const error = await failure(runTask('http', { method: 'GET', url: `${api.url}/to-this-host` }))
    expect(error.message).toContain('127.0.0.1 is a special-purpose address (127.0.0.0/8 Loopback')
    expect(api.requests.slice(asked).map((request) => request.url)).toEqual(['/to-this-host'])
  })

  it('is followed anywhere when the task says allowUnrestrictedNetworkAccess="true"', async () => {
    const text = await runTask('http', {
      method: 'GET',
      url: `${api.url}/to-this-host`,
      allowUnrestrictedNetworkAccess: 'true',
    })
    expect(JSON.parse(text as string)).toEqual({ secret: 'internal value' })
  })
})

describe('how many redirects are followed', () => {
  it('a chain of exactly 20 redirects is followed to its answer', async () => {
    const asked = api.requests.length
    const text = await runTask('http', {
      method: 'GET',
      url: `${api.url}/hop/0`,
      allowUnrestrictedNetworkAccess: 'true',
    })
    expect(JSON.parse(text as string)).toEqual({ reached: '/hop/20' })
    expect(api.requests.length - asked).toBe(21)
  })
})

describe('a redirect loop', () => {
  it('across two origins is recorded as a loop: final, the source at fault', async () => {
    const port = new URL(api.url).port
    const error = await failure(
      runTask('http', {
        method: 'GET',
        url: `${api.url}/ping`,
        allowUnrestrictedNetworkAccess: 'true',
      }),
    )
    expect(error.message).toBe(
      `GET http://127.0.0.1:${port}/ping redirected in a loop: http://127.0.0.1:${port}/ping -> http://localhost:${port}/pong -> http://127.0.0.1:${port}/ping`,
    )
    expect(error.kind).toBe('upstream')
    expect(error.retryable).toBe(false)
  })
})

describe('where a redirect leads (the Fetch standard)', () => {
  const post: Hop = {
    method: 'POST',
    url: 'https://api.example/v1/x?key=secret',
    body: '{"a":1}',
    headers: { 'content-type': 'application/json', authorization: 'Bearer t', 'x-id': '1' },
  }
  const follow = (status: number, location: string, hop: Hop = post) =>
    redirectTarget(status, location, hop, [hop.url], 'POST https://api.example/v1/x')

  it('turns a POST into a GET without its body on 301, 302 and 303; keeps both on 307 and 308', () => {
    for (const status of [301, 302, 303])
      expect(follow(status, '/v2/x')).toEqual({
        method: 'GET',
        url: 'https://api.example/v2/x',
        headers: { authorization: 'Bearer t', 'x-id': '1' },
      })
    for (const status of [307, 308])
      expect(follow(status, '/v2/x')).toEqual({ ...post, url: 'https://api.example/v2/x' })
    expect(follow(303, '/y', { ...post, method: 'HEAD' })?.method).toBe('HEAD')
  })

  it('keeps the method and body of anything but a POST on 301 and 302', () => {
    for (const method of ['PUT', 'DELETE', 'PATCH'] as const)
      for (const status of [301, 302])
        expect(follow(status, '/v2/x', { ...post, method })).toEqual({
          ...post,
          method,
          url: 'https://api.example/v2/x',
        })
  })

  it('a Location that is not a URL is the source at fault, quoted to 80 characters', () => {
    const refusal = (location: string) => {
      try {
        follow(302, location)
      } catch (error) {
        return error as TaskError
      }
      return expect.fail(`${location} was followed`)
    }
    const short = refusal('http://[::1')
    expect(short).toBeInstanceOf(TaskError)
    expect(short.message).toBe(
      'POST https://api.example/v1/x redirected to "http://[::1", not a URL',
    )
    expect(short).toMatchObject({ kind: 'upstream', retryable: false })
    const long = `http://exa mple/${'x'.repeat(200)}`
    expect(refusal(long).message).toBe(
      `POST https://api.example/v1/x redirected to ${JSON.stringify(long.slice(0, 80))}, not a URL`,
    )
  })

  it('drops credentials on the way to another origin, and is no redirect without a Location', () => {
    expect(follow(307, 'https://other.example/x')?.headers).toEqual({
      'content-type': 'application/json',
      'x-id': '1',
    })
    expect(redirectTarget(302, undefined, post, [post.url], 'POST')).toBeUndefined()
    expect(redirectTarget(200, '/x', post, [post.url], 'POST')).toBeUndefined()
  })

  it('refuses a scheme other than http and https, and a 21st redirect', () => {
    expect(() => follow(302, 'file:///etc/passwd')).toThrow('redirected to a file: URL')
    const visited = Array.from({ length: 21 }, (_, index) => `https://api.example/${index}`)
    expect(() => redirectTarget(302, '/next', post, visited, 'POST')).toThrow(
      'redirected more than 20 times',
    )
  })
})
