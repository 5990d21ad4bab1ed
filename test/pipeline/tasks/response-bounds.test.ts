import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TaskError } from '../../../src/pipeline/index.ts'
import type { HostResolver } from '../../../src/pipeline/tasks/address-guard.ts'
import {
  PUBLIC_UNSERVED_V6,
  startHostileSource,
  type HostileSource,
} from '../../support/hostile-source.ts'
import { runTask, taskFailure as failure } from '../support/task.ts'

let source: HostileSource
beforeAll(async () => {
  source = await startHostileSource()
})
afterAll(() => source.close())

describe('a body is read under its cap while it streams', () => {
  it('an endless chunked body: the http task stops at 32 KiB, names the setting, not retryable', async () => {
    const error = await failure(runTask('http', { method: 'GET', url: `${source.url}/endless` }))
    expect(error.message).toContain('sent more than 32768 bytes')
    expect(error.message).toContain('HTTP_TASK_MAX_RESPONSE_BYTES')
    expect(error.retryable).toBe(false)
  })
  it('200 MB chunked through a bridge: stops at BRIDGE_MAX_RESPONSE_BYTES and hangs up', async () => {
    const before = source.sent.get('/chunked-200mb') ?? 0
    const error = await failure(
      runTask(
        'bridge',
        { name: 'hostile' },
        { context: { env: { BRIDGE_HOSTILE_URL: `${source.url}/chunked-200mb` } } },
      ),
    )
    expect(error.message).toMatch(/over the cap of \d+ bytes \(BRIDGE_MAX_RESPONSE_BYTES\)/)
    expect(error.retryable).toBe(false)
    // The source got as far as the socket buffers let it, far from 200 MB.
    await new Promise((resolve) => setTimeout(resolve, 200))
    expect((source.sent.get('/chunked-200mb') ?? 0) - before).toBeLessThan(32 * 1024 * 1024)
  })
  it("a task's literal maxResponseBytes sets its cap; a variable there is refused", async () => {
    const small = await failure(
      runTask('http', { method: 'GET', url: `${source.url}/deep`, maxResponseBytes: '1000' }),
    )
    expect(small.message).toContain("over the cap of 1000 bytes (the task's maxResponseBytes)")
    const fromVariable = await failure(
      runTask(
        'http',
        { method: 'GET', url: `${source.url}/ok`, maxResponseBytes: '$(req.cap)' },
        { vars: { req: { cap: '999999999' } } },
      ),
    )
    expect(fromVariable.message).toContain('maxResponseBytes must be a whole number')
    const ok = await runTask('http', {
      method: 'GET',
      url: `${source.url}/ok?value=7`,
      maxResponseBytes: '100',
    })
    expect(JSON.parse(ok as string)).toEqual({ value: '7' })
  })
  it('a drip of one byte a second ends at the task timeout', async () => {
    const error = await failure(
      runTask('http', { method: 'GET', url: `${source.url}/drip` }, {}, AbortSignal.timeout(1_500)),
    )
    expect(error.message).toContain('timed out')
  })
  it('invalid UTF-8 and a binary content type are refused with their reason', async () => {
    const utf8 = await failure(runTask('http', { method: 'GET', url: `${source.url}/bad-utf8` }))
    expect(utf8.message).toContain('not UTF-8 text')
    const binary = await failure(runTask('http', { method: 'GET', url: `${source.url}/binary` }))
    expect(binary.message).toContain('content-type image/png, not JSON or text')
  })
  it('a redirect loop ends after 20 hops', async () => {
    const error = await failure(
      runTask('http', {
        method: 'GET',
        url: `${source.url}/loop`,
        allowUnrestrictedNetworkAccess: 'true',
      }),
    )
    expect(error.message).toContain('redirected more than 20 times')
    expect(error.retryable).toBe(false)
  })
})

describe('parsing is bounded', () => {
  it('deep nesting and a number of 10^6 digits are refused by jsonparse with the reason', async () => {
    const deep = `${'['.repeat(100_000)}${']'.repeat(100_000)}`
    const nested = await failure(runTask('jsonparse', { path: '0' }, { inputs: [deep] }))
    expect(nested.message).toContain('nesting deeper than 64')
    expect(nested.message).toContain('JSON_MAX_DEPTH')
    const big = `{"value":${'9'.repeat(1_000_000)}}`
    const number = await failure(runTask('jsonparse', { path: 'value' }, { inputs: [big] }))
    expect(number.message).toContain('a number of 1000000 characters, longer than 1000')
    // Within the bound, deep documents still parse.
    expect(
      await runTask(
        'jsonparse',
        { path: '0' },
        { inputs: [`${'['.repeat(60)}1${']'.repeat(60)}`] },
      ),
    ).toHaveLength(1)
  })
})

describe('the private-address guard sits where the connection is made', () => {
  it('a name that answers public then loopback (rebinding) never reaches loopback', async () => {
    const answers: string[] = []
    // A public address no test serves stands for the public answer: the first attempt to connect
    // there is cut short (or refused, or unreachable: each is worth a retry).
    const rebinding: HostResolver = async () => {
      const address = answers.length === 0 ? PUBLIC_UNSERVED_V6 : '127.0.0.1'
      answers.push(address)
      return [{ address, family: address.includes(':') ? 6 : 4 }]
    }
    const hits = source.hits.get('/ok') ?? 0
    const error = await failure(
      (async () => {
        // The first connection gets the public answer (and fails to connect); the retry, loopback.
        for (let attempt = 0; ; attempt++) {
          try {
            return await runTask(
              'http',
              { method: 'GET', url: '$(req.url)' },
              {
                vars: { req: { url: `http://rebind.test:${source.port}/ok` } },
                context: { resolveHost: rebinding },
              },
              AbortSignal.timeout(attempt === 0 ? 300 : 5_000),
            )
          } catch (caught) {
            if (attempt > 0 || !(caught instanceof TaskError) || !caught.retryable) throw caught
          }
        }
      })(),
    )
    expect(answers).toEqual([PUBLIC_UNSERVED_V6, '127.0.0.1'])
    expect(error.message).toContain(
      'rebind.test resolves to 127.0.0.1, a special-purpose address (127.0.0.0/8 Loopback, RFC 1122)',
    )
    expect(source.hits.get('/ok') ?? 0).toBe(hits)
  })
  it('the literal forms stay refused', async () => {
    const hits = source.hits.get('/ok') ?? 0
    for (const host of [
      '127.1',
      '2130706433',
      '0x7f.1',
      '[::1]',
      '[::ffff:127.0.0.1]',
      '[::]',
      '0.0.0.0',
      'localhost',
    ]) {
      const error = await failure(
        runTask(
          'http',
          { method: 'GET', url: '$(req.url)' },
          { vars: { req: { url: `http://${host}:${source.port}/ok` } } },
        ),
      )
      expect(error.message, host).toMatch(
        /(is|resolves to [^,]+,) a special-purpose address \((127\.0\.0\.0\/8 Loopback|::1\/128 Loopback|::ffff:0:0\/96 IPv4-mapped|::\/128 Unspecified|0\.0\.0\.0\/32 "This host)/,
      )
    }
    expect(source.hits.get('/ok') ?? 0).toBe(hits)
  })
})
