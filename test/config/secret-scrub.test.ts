import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createLogger } from '../../src/config/logger.ts'
import { secretScrubber } from '../../src/config/secret-scrub.ts'
import { secretValues } from '../../src/config/secrets.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import { echoes, longestShared } from '../support/secret-forms.ts'

/**
 * Issue 38, point 5: the scrub knows every configured secret (FEED_API_KEY, FEED_KEY_*, the node keys
 * however they are given, keys_env's among them) in every form it travels in, case-folded; at the
 * upstream boundary also in part. What is left of a secret after a scrub is measured as the longest
 * run it shares with any form of the secret, case-folded.
 */
const FEED_KEY = 'FeedKey/leak+check=7f3a9c1b2d4e5f60&x'
const PARTNER_KEY = 'partner-key-0b1c2d3e4f5a6b7c'
const NODE_KEY = ANVIL_PRIVATE_KEYS[3]!
const HOT_KEY = ANVIL_PRIVATE_KEYS[4]!
const dir = mkdtempSync(join(tmpdir(), 'feedrunner-scrub-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('secretScrubber', () => {
  it('whole forms: raw, %-encoded, form-encoded, hex and base64 at any alignment, case-folded', () => {
    const scrub = secretScrubber([FEED_KEY])
    const { half, otherHalf, halfUpper, halfBase64, halfPercent, ...whole } = echoes(FEED_KEY)
    for (const [name, echo] of Object.entries(whole)) {
      const text = `the service said: bad key ${echo} (401)`
      const clean = scrub(text)
      expect(clean, name).toContain('[redacted]')
      expect(clean, name).toMatch(/^the service said: bad key .*\(401\)$/)
      // At most the first or last group of an encoding the key shares with what surrounds it.
      expect(longestShared(clean, FEED_KEY), `${name}: ${clean}`).toBeLessThan(5)
    }
    void [half, otherHalf, halfUpper, halfBase64, halfPercent]
  })

  it('partial: every echo of a part of the key, in any of those forms, leaves less than 10 characters of it', () => {
    const scrub = secretScrubber([FEED_KEY], { partial: true })
    for (const [name, echo] of Object.entries(echoes(FEED_KEY))) {
      const clean = scrub(`{"description":"key ${echo} refused"}`)
      expect(longestShared(clean, FEED_KEY), `${name}: ${clean}`).toBeLessThan(10)
    }
    // Words that are not the key stay as they are.
    const words = 'no match for homeTeam Manchester United on 2024-08-16 (404)'
    expect(scrub(words)).toBe(words)
  })

  it('leaves secrets of fewer than 4 characters alone, and text without a secret untouched', () => {
    expect(secretScrubber(['abc'])('abc abc')).toBe('abc abc')
    const text = 'tx 0x' + 'ab'.repeat(32) + ' mined'
    expect(secretScrubber([NODE_KEY, NODE_KEY.slice(2)])(text)).toBe(text)
  })

  it('costs a few microseconds a log line, and a pass over a 2 MiB answer in partial mode', () => {
    const scrub = secretScrubber(
      secretValues(parseSettings({ FEED_API_KEY: FEED_KEY, NODE_PRIVATE_KEY: NODE_KEY }), {}),
    )
    const line =
      '{"level":30,"time":1764150000000,"name":"feedrunner-runner","run":"31337:0xe7f1725e7734ce288f8367e1bb143e90bb3f0512:0x5f2b","state":"fulfilled","tx":"0x' +
      'cd'.repeat(32) +
      '","ms":412,"msg":"run fulfilled"}'
    const rounds = 20_000
    let started = process.hrtime.bigint()
    for (let index = 0; index < rounds; index++) scrub(line)
    const perLineUs = Number(process.hrtime.bigint() - started) / rounds / 1_000
    const partial = secretScrubber([FEED_KEY], { partial: true })
    const answer = JSON.stringify({ data: 'x'.repeat(2 * 1024 * 1024) })
    started = process.hrtime.bigint()
    expect(partial(answer)).toBe(answer)
    const answerMs = Number(process.hrtime.bigint() - started) / 1e6
    console.log(
      `[secret-scrub] a ${line.length}-character log line: ${perLineUs.toFixed(2)} us; a 2 MiB answer, partial: ${answerMs.toFixed(1)} ms`,
    )
  })
})

describe('the secrets a process holds, and its logger', () => {
  const chainsFile = join(dir, 'chains.toml')
  writeFileSync(
    chainsFile,
    `[[chains]]\nchain_id = 31337\nkeys_env = ["HOT_KEY_A"]\n[[chains.endpoints]]\nurl = "http://127.0.0.1:8545"\n`,
  )
  const env = { FEED_KEY_PARTNER: PARTNER_KEY, HOT_KEY_A: HOT_KEY, UNRELATED: 'not-a-secret-value' }

  it('lists FEED_API_KEY, FEED_KEY_*, the node keys and the keys named by keys_env, hex with and without 0x', () => {
    const settings = parseSettings({
      FEED_API_KEY: FEED_KEY,
      NODE_PRIVATE_KEY: NODE_KEY,
      CHAINS_FILE: chainsFile,
    })
    const values = secretValues(settings, env)
    for (const secret of [
      FEED_KEY,
      PARTNER_KEY,
      NODE_KEY,
      NODE_KEY.slice(2),
      HOT_KEY,
      HOT_KEY.slice(2),
    ])
      expect(values).toContain(secret)
    expect(values).not.toContain('not-a-secret-value')
  })

  it('the logger writes none of them, raw, %-encoded or case-folded', () => {
    const saved = { ...process.env }
    Object.assign(process.env, env)
    const lines: string[] = []
    try {
      const logger = createLogger(
        parseSettings({
          FEED_API_KEY: FEED_KEY,
          NODE_PRIVATE_KEY: NODE_KEY,
          CHAINS_FILE: chainsFile,
          LOG_LEVEL: 'info',
        }),
        'scrub-test',
        { write: (line: string) => void lines.push(line) },
      )
      for (const secret of [FEED_KEY, PARTNER_KEY, NODE_KEY, HOT_KEY]) {
        logger.info(`raw ${secret}`)
        logger.info({ url: `http://feed/x?key=${encodeURIComponent(secret)}` }, 'a URL')
        logger.warn(`upper ${secret.toUpperCase()} lower ${secret.toLowerCase()}`)
        logger.error({ err: new Error(`failed with ${secret}`) }, 'an error')
      }
    } finally {
      process.env = saved
    }
    const output = lines.join('\n')
    expect(lines).toHaveLength(16)
    for (const secret of [FEED_KEY, PARTNER_KEY, NODE_KEY, HOT_KEY])
      expect(longestShared(output, secret), secret).toBeLessThan(10)
    expect(output.split('[redacted]').length - 1).toBeGreaterThanOrEqual(20)
  })
})
