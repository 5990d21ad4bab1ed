import { Decoder } from 'cbor-x'
import { afterAll, describe, expect, it } from 'vitest'
import { nestingBeyond } from '../../../src/net/bounded-body.ts'
import { NodeBudget } from '../../../src/net/decode-budget.ts'
import { DEFAULT_PIPELINE_LIMITS, encodeRequestParams } from '../../../src/pipeline/index.ts'
import { runTask } from '../support/task.ts'
import {
  abiAliasBomb,
  cborAliasBomb,
  expandedLeaves,
  jsonWideBomb,
} from '../../support/decode-bombs.ts'

/**
 * Issue 38: decoders bounded by what they build, not only by what they read. The alias bomb (CBOR
 * shared references, 2^24 leaves from 147 bytes) and its JSON and ABI cousins are refused with their
 * cause named, and the process's memory stays where it was (sampled while each decode runs).
 */
const MB = 1024 * 1024
const figures: Record<string, unknown> = {}

/** Runs `work` and reports the most RSS grew while it ran. */
async function rssGrowth(work: () => Promise<unknown>): Promise<{ mb: number; error: unknown }> {
  const before = process.memoryUsage().rss
  let peak = before
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5)
  let error: unknown
  try {
    await work()
  } catch (caught) {
    error = caught
  } finally {
    clearInterval(sampler)
  }
  peak = Math.max(peak, process.memoryUsage().rss)
  return { mb: Math.round(((peak - before) / MB) * 10) / 10, error }
}

const withNodes = (decodeMaxNodes: number) => ({
  context: { limits: { ...DEFAULT_PIPELINE_LIMITS, decodeMaxNodes } },
})

afterAll(() => {
  console.log(`decode bounds: ${JSON.stringify(figures)}`)
})

describe('cborparse: the alias bomb and other references', () => {
  it('refuses the 24-level alias bomb, naming tag 28, without building it', async () => {
    const bomb = cborAliasBomb(24)
    // The bomb is real: decoded with its references kept, it stands for 2^24 leaves.
    const shared = new Decoder({ mapsAsObjects: false, useRecords: false }).decode(
      Buffer.concat([Buffer.from([0xbf]), bomb, Buffer.from([0xff])]),
    ) as Map<string, unknown>
    expect(expandedLeaves(shared.get('a'))).toBe(2 ** 24)
    const { mb, error } = await rssGrowth(() => runTask('cborparse', {}, { inputs: [bomb] }))
    expect((error as Error).message).toMatch(
      /^data uses CBOR tag 28 \(a shared value, which tag 29 refers back to\) at byte 2: a Chainlink request carries only tags 2 and 3/,
    )
    expect(mb).toBeLessThan(50)
    figures.cborBomb = { bytes: bomb.length, leaves: 2 ** 24, rssGrowthMb: mb }
  })

  it('refuses every tag but big numbers: packed values, string references, objects, sets', async () => {
    const cases: Array<[string, number[], RegExp]> = [
      ['sharedref alone', [0x61, 0x61, 0xd8, 0x1d, 0x00], /tag 29 \(a reference to a shared value/],
      ['packed table', [0x61, 0x61, 0xd8, 0x33, 0x84, 0x80, 0x80, 0x80, 0x01], /tag 51/],
      ['packed reference', [0x61, 0x61, 0xc6, 0x00], /tag 6 \(a reference to a packed value/],
      ['stringref namespace', [0x61, 0x61, 0xd9, 0x01, 0x00, 0x61, 0x78], /tag 256/],
      ['stringref', [0x61, 0x61, 0xd8, 0x19, 0x00], /tag 25 \(a reference to an earlier string/],
      ['generic object', [0x61, 0x61, 0xd8, 0x1b, 0x82, 0x61, 0x45, 0x61, 0x78], /tag 27 at/],
      ['set', [0x61, 0x61, 0xd9, 0x01, 0x02, 0x80], /tag 258 at/],
      ['date', [0x61, 0x61, 0xc1, 0x01], /tag 1 at/],
    ]
    for (const [name, bytes, reason] of cases) {
      const error = await runTask('cborparse', {}, { inputs: [Uint8Array.from(bytes)] }).catch(
        (caught: unknown) => caught,
      )
      expect((error as Error).message, name).toMatch(reason)
      expect((error as Error).message, name).toMatch(/only tags 2 and 3 \(big numbers\)/)
    }
    // Big numbers still decode, as Chainlink's CBOR.sol writes them.
    const big = await runTask(
      'cborparse',
      {},
      {
        inputs: [
          encodeRequestParams([
            ['big', 1n << 70n],
            ['neg', -(1n << 70n)],
          ]),
        ],
      },
    )
    expect(big).toEqual({ big: 1n << 70n, neg: -(1n << 70n) - 0n })
  })

  it('counts every value against DECODE_MAX_NODES, indefinite-length strings by their bytes', async () => {
    const params = Array.from({ length: 40 }, (_, index) => [`k${index}`, 'v'] as const)
    const data = encodeRequestParams(params)
    // 40 keys and 40 values, and the map: 81 values.
    expect(await runTask('cborparse', {}, { inputs: [data], ...withNodes(81) })).toEqual(
      Object.fromEntries(params),
    )
    await expect(runTask('cborparse', {}, { inputs: [data], ...withNodes(80) })).rejects.toThrow(
      'data (CBOR, diet) would build more than 80 values (DECODE_MAX_NODES)',
    )
    // "s": an indefinite-length array of three numbers and "t": 80 bytes of text, 1 + 2 more.
    const open = Uint8Array.from([
      0x61,
      0x73,
      0x9f,
      0x01,
      0x02,
      0x03,
      0xff,
      0x61,
      0x74,
      0x78,
      80,
      ...new Array(80).fill(0x61),
    ])
    expect(await runTask('cborparse', {}, { inputs: [open], ...withNodes(1 + 5 + 4) })).toEqual({
      s: [1, 2, 3],
      t: 'a'.repeat(80),
    })
    await expect(runTask('cborparse', {}, { inputs: [open], ...withNodes(9) })).rejects.toThrow(
      'DECODE_MAX_NODES',
    )
  })

  it('refuses malformed items before cbor-x sees them, with the byte', async () => {
    await expect(
      runTask(
        'cborparse',
        {},
        {
          inputs: [
            Uint8Array.from([0x61, 0x61, 0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]),
          ],
        },
      ),
    ).rejects.toThrow(
      /not valid CBOR \(diet\): claims .* entries, more than the bytes left at byte 2/,
    )
    await expect(
      runTask('cborparse', {}, { inputs: [Uint8Array.from([0x61, 0x61, 0x1c])] }),
    ).rejects.toThrow(/reserved additional information 28 at byte 2/)
  })
})

describe('jsonparse: the JSON cousin', () => {
  it('refuses 10 MiB of empty arrays (3.5 million values) before building one', async () => {
    const text = jsonWideBomb(10 * 1024 * 1024 - 16)
    const { mb, error } = await rssGrowth(() =>
      runTask('jsonparse', { path: '0' }, { inputs: [text] }),
    )
    expect((error as Error).message).toBe(
      'data (JSON) would build more than 100000 values (DECODE_MAX_NODES); it was refused before they were built',
    )
    // The 10 MiB of text itself is most of what there is (two bytes a character in V8's strings).
    expect(mb).toBeLessThan(60)
    figures.jsonBomb = {
      bytes: text.length,
      values: Math.floor((text.length - 2) / 3) + 1,
      rssGrowthMb: mb,
    }
  })

  it('counts objects, keys, strings, numbers and literals; keeps documents under the budget', async () => {
    const count = (text: string) => {
      const budget = new NodeBudget(1_000_000, 'test')
      nestingBeyond(text, 64, budget)
      return budget.count
    }
    // The object, key a, the array, 1, "x", true, null, {}, -2.5e3: 9 values.
    expect(count('{"a":[1,"x",true,null,{},-2.5e3]}')).toBe(9)
    expect(count(`["${'y'.repeat(64)}"]`)).toBe(1 + 3)
    expect(count('[[],[],[]]')).toBe(4)
    expect(
      await runTask('jsonparse', { path: 'a,1' }, { inputs: ['{"a":[1,2,3]}'], ...withNodes(6) }),
    ).toBe(2)
    await expect(
      runTask('jsonparse', { path: 'a,1' }, { inputs: ['{"a":[1,2,3]}'], ...withNodes(5) }),
    ).rejects.toThrow('DECODE_MAX_NODES')
  })
})

describe('ethabidecodelog: the ABI cousin', () => {
  const decode = (bomb: ReturnType<typeof abiAliasBomb>) =>
    runTask(
      'ethabidecodelog',
      { abi: bomb.abi, data: '$(log.data)', topics: '$(log.topics)' },
      { vars: { log: { data: bomb.data, topics: bomb.topics } } },
    )

  it('decodes arrays whose offsets share a target while they stay small', async () => {
    expect(await decode(abiAliasBomb(3))).toEqual({
      values: [
        [
          [7n, 7n],
          [7n, 7n],
        ],
        [
          [7n, 7n],
          [7n, 7n],
        ],
      ],
    })
  })

  it('refuses offsets that point at one place 2^20 and 2^24 times, the second padded past ethers own bound', async () => {
    for (const [levels, padding] of [
      [24, 0],
      [20, 1024 * 1024],
    ] as const) {
      const bomb = abiAliasBomb(levels, padding)
      const { mb, error } = await rssGrowth(() => decode(bomb))
      expect((error as Error).message).toMatch(
        /^cannot decode the log as Bomb\(uint256(\[\])+\): data \(ABI\) would build more than 100000 values \(DECODE_MAX_NODES\)/,
      )
      expect(mb).toBeLessThan(50)
      figures[`abiBomb${levels}`] = {
        bytes: (bomb.data.length - 2) / 2,
        leaves: bomb.leaves,
        rssGrowthMb: mb,
      }
    }
  })
})
