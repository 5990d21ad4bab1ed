import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import fc from 'fast-check'
import { encode as cborEncode } from 'cbor-x'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { loadJobSpec, TaskError } from '../../src/pipeline/index.ts'
import { isRestrictedAddress } from '../../src/pipeline/tasks/http.ts'
import { runTask } from '../pipeline/support/task.ts'
import { FUZZ_RUNS as RUNS, recordFigures } from './support.ts'

/**
 * Hostile input to the pipeline, no service running: job spec files, CBOR request data, and URLs a
 * request hands the http task. The adapter's HTTP endpoint: hostile-input-adapter.test.ts.
 */
describe('hostile input', () => {
  const figures: Record<string, unknown> = {}

  afterAll(() => {
    recordFigures('hostile-input-pipeline', figures)
  })

  it(`job spec loader: ${RUNS} mutated and random specs end in problems, never a crash`, async () => {
    const original = readFileSync(join(import.meta.dirname, '../../jobs/game-odds.toml'), 'utf8')
    const mutation = fc.array(
      fc.tuple(
        fc.nat(original.length),
        fc.nat(20),
        fc.string({
          maxLength: 8,
          unit: fc.constantFrom(
            '"',
            '\\',
            '[',
            ']',
            '{',
            '}',
            '=',
            '\n',
            '-',
            '>',
            '$',
            '(',
            ')',
            ';',
            'x',
            '0',
            '#',
            "'",
            '\u0000',
            'é',
          ),
        }),
      ),
      { minLength: 1, maxLength: 5 },
    )
    let withProblems = 0
    await fc.assert(
      fc.property(
        fc.oneof(
          mutation.map((edits) =>
            edits.reduce(
              (text, [at, remove, insert]) => text.slice(0, at) + insert + text.slice(at + remove),
              original,
            ),
          ),
          fc.string({ maxLength: 400 }),
        ),
        (text) => {
          const result = loadJobSpec(text, 'fuzz.toml')
          if (result.problems.length > 0) withProblems++
          expect(result.job !== undefined || result.problems.length > 0).toBe(true)
          for (const problem of result.problems)
            expect(typeof problem.message === 'string' && problem.message.length > 0).toBe(true)
        },
      ),
      { numRuns: RUNS },
    )
    figures.loaderInputs = RUNS
    figures.loaderWithProblems = withProblems
    // Size limits: a huge spec is refused quickly, with a problem that says so.
    const started = Date.now()
    const huge = loadJobSpec(original + `\n# ${'x'.repeat(2 * 1024 * 1024)}\n`, 'huge.toml')
    expect(huge.job).toBeUndefined()
    expect(huge.problems.map((problem) => problem.message).join(' ')).toMatch(
      /bytes|characters|large|size|limit/i,
    )
    const manyTasks = original.replace(
      'decode_log -> decode_cbor',
      `${Array.from({ length: 5_000 }, (_, index) => `t${index} [type="any"]`).join('\n')}\n decode_log -> decode_cbor`,
    )
    const many = loadJobSpec(manyTasks, 'many.toml')
    expect(many.job).toBeUndefined()
    expect(Date.now() - started).toBeLessThan(60_000) // a hang catcher: unbounded parsing never ends
  }, 300_000)

  it(`cborparse: ${RUNS} random and hostile buffers end in a TaskError; huge maps are refused`, async () => {
    const bufferOf = fc.oneof(
      fc.uint8Array({ maxLength: 400 }),
      fc
        .dictionary(
          fc.string({ maxLength: 10 }),
          fc.oneof(
            fc.string(),
            fc.integer(),
            fc.double(),
            fc.boolean(),
            fc.constant(null),
            fc.array(fc.integer(), { maxLength: 5 }),
          ),
          { maxKeys: 10 },
        )
        .map((object) => {
          const encoded = new Uint8Array(cborEncode(object))
          // The on-chain buffer is a map body without its header; cut the header off, sometimes badly.
          return encoded.subarray(1)
        }),
    )
    let errors = 0
    await fc.assert(
      fc.asyncProperty(bufferOf, fc.constantFrom('diet', 'standard'), async (bytes, mode) => {
        try {
          await runTask('cborparse', { mode }, { inputs: [bytes] })
        } catch (error) {
          errors++
          expect(error).toBeInstanceOf(TaskError)
          expect((error as Error).message.length).toBeGreaterThan(5)
        }
      }),
      { numRuns: RUNS },
    )
    figures.cborInputs = RUNS
    figures.cborErrors = errors
    const started = Date.now()
    // A map that claims 2^60 entries, and one with 20,000 real ones: refused, quickly.
    const claimsHuge = Uint8Array.from([
      0x61, 0x61, 0xbb, 0x10, 0, 0, 0, 0, 0, 0, 0, 0x61, 0x62, 0x01,
    ])
    await expect(
      runTask('cborparse', { mode: 'standard' }, { inputs: [claimsHuge] }),
    ).rejects.toBeInstanceOf(TaskError)
    const entries: number[] = []
    for (let index = 0; index < 20_000; index++)
      entries.push(0x63, 0x6b, ((index >> 8) & 0x7f) | 0x20, (index & 0x7f) | 0x20, 0x01)
    await expect(runTask('cborparse', {}, { inputs: [Uint8Array.from(entries)] })).rejects.toThrow(
      /entries|keys|more than|limit/i,
    )
    expect(Date.now() - started).toBeLessThan(60_000) // a hang catcher: 2^60 entries never end
  }, 300_000)

  describe('http task: a URL from a request cannot reach loopback or private addresses', () => {
    let server: Server
    let hits = 0
    let port = 0
    beforeAll(async () => {
      server = createServer((_request, response) => {
        hits++
        response.end('reached')
      })
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      port = (server.address() as AddressInfo).port
    })
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

    it('every spelling of loopback and private hosts is refused before a connection is made', async () => {
      const hosts = [
        '127.0.0.1',
        'localhost',
        'LOCALHOST.',
        '127.1',
        '0x7f000001',
        '2130706433',
        '0177.0.0.1',
        '0',
        '0.0.0.0',
        '[::1]',
        '[::ffff:127.0.0.1]',
        '[::ffff:7f00:1]',
        '[0:0:0:0:0:ffff:127.0.0.1]',
        '[::127.0.0.1]',
        '[64:ff9b::127.0.0.1]',
        '[2002:7f00:1::]',
        '10.0.0.1',
        '172.16.5.4',
        '192.168.1.1',
        '169.254.169.254',
        '100.64.0.1',
        '[fd00::1]',
        '[fe80::1]',
        'user:pass@127.0.0.1',
      ]
      const refused: string[] = []
      for (const host of hosts) {
        const url = `http://${host}:${port}/secret`
        try {
          await runTask('http', { method: 'GET', url: '$(req.url)' }, { vars: { req: { url } } })
        } catch (error) {
          expect(error, url).toBeInstanceOf(TaskError)
          expect((error as Error).message, url).toMatch(
            /a special-purpose address|cannot resolve|not a valid URL/,
          )
          refused.push(host)
        }
      }
      expect(hits).toBe(0)
      expect(refused).toEqual(hosts)
      // Addresses that embed an IPv4 address (IPv4-compatible, NAT64, 6to4) are refused whatever they
      // embed: each prefix is a row of IANA's registry (or, IPv4-compatible, a deprecated form).
      for (const address of [
        '::7f00:1',
        '64:ff9b::7f00:1',
        '64:ff9b::a00:1',
        '2002:7f00:1::',
        '2002:c0a8:101::1',
      ])
        expect(isRestrictedAddress(address), address).toBe(true)
      expect(isRestrictedAddress('64:ff9b::808:808')).toBe(true)
      expect(isRestrictedAddress('8.8.8.8')).toBe(false)
      figures.ssrfSpellingsRefused = refused.length
    })
  })
})
