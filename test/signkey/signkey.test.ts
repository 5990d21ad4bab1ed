import { Wallet } from 'ethers'
import { describe, expect, it } from 'vitest'
import { parseSettings } from '../../src/config/settings.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import {
  createSignKey,
  hashParams,
  isSignedKey,
  resolveKey,
  SignKeyError,
  substituteQuery,
  verifySignKey,
} from '../../src/signkey/index.ts'

const nodeKey = ANVIL_PRIVATE_KEYS[1]!
const otherKey = ANVIL_PRIVATE_KEYS[2]!
const node = new Wallet(nodeKey).address
const params = {
  region: 'england',
  sport: 'soccer',
  league: 'epl',
  date: '2024-08-16',
  homeTeam: 'Manchester United',
}
const now = Date.UTC(2026, 0, 1)

async function token(
  overrides: Partial<Parameters<typeof createSignKey>[0]> = {},
): Promise<string> {
  return createSignKey({
    privateKey: nodeKey,
    requestId: 'req-1',
    endpoint: 'game-odds',
    params,
    ttlSeconds: 300,
    now,
    ...overrides,
  })
}

function rejection(fn: () => unknown): string {
  try {
    fn()
  } catch (error) {
    if (error instanceof SignKeyError) return error.code
    throw error
  }
  return 'accepted'
}

describe('signed keys', () => {
  it('round-trips: the operator gets the claims back', async () => {
    const signed = await token()
    expect(signed).toMatch(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
    expect(isSignedKey(signed)).toBe(true)
    const claims = verifySignKey(signed, {
      endpoint: 'game-odds',
      params: { ...params, key: signed },
      allowedSigners: [node.toLowerCase()],
      now: now + 60_000,
    })
    expect(claims).toMatchObject({ rid: 'req-1', ep: 'game-odds', node, exp: now / 1000 + 300 })
  })

  it('binds a very long request id by its hash', async () => {
    const signed = await token({ requestId: 'x'.repeat(500) })
    const claims = verifySignKey(signed, {
      endpoint: 'game-odds',
      params,
      allowedSigners: [node],
      now,
    })
    expect(claims.rid).toMatch(/^0x[0-9a-f]{64}$/)
  })

  it('makes every key unique, even for the same request in the same second', async () => {
    expect(await token()).not.toBe(await token())
  })

  it('binds the parameters regardless of their order', () => {
    expect(hashParams({ a: '1', b: '2' })).toBe(hashParams({ b: '2', a: '1', key: 'ignored' }))
    expect(hashParams({ a: '1', b: '2' })).not.toBe(hashParams({ a: '1', b: '3' }))
  })

  it('rejects a signer that is not accepted', async () => {
    const signed = await token({ privateKey: otherKey })
    expect(
      rejection(() =>
        verifySignKey(signed, { endpoint: 'game-odds', params, allowedSigners: [node], now }),
      ),
    ).toBe('UNKNOWN_SIGNER')
  })

  it('rejects an expired key', async () => {
    const signed = await token()
    expect(
      rejection(() =>
        verifySignKey(signed, {
          endpoint: 'game-odds',
          params,
          allowedSigners: [node],
          now: now + 301_000,
        }),
      ),
    ).toBe('EXPIRED')
  })

  it('rejects a key issued in the future or living too long', async () => {
    const future = await token({ now: now + 3_600_000 })
    expect(
      rejection(() =>
        verifySignKey(future, { endpoint: 'game-odds', params, allowedSigners: [node], now }),
      ),
    ).toBe('NOT_YET_VALID')
    const long = await token({ ttlSeconds: 86_400 })
    expect(
      rejection(() =>
        verifySignKey(long, { endpoint: 'game-odds', params, allowedSigners: [node], now }),
      ),
    ).toBe('TTL_TOO_LONG')
  })

  it('rejects a key replayed for other parameters or another endpoint', async () => {
    const signed = await token()
    expect(
      rejection(() =>
        verifySignKey(signed, {
          endpoint: 'game-odds',
          params: { ...params, homeTeam: 'Arsenal' },
          allowedSigners: [node],
          now,
        }),
      ),
    ).toBe('PARAMS_MISMATCH')
    expect(
      rejection(() =>
        verifySignKey(signed, { endpoint: 'boxscores', params, allowedSigners: [node], now }),
      ),
    ).toBe('WRONG_ENDPOINT')
  })

  it('rejects a tampered key', async () => {
    const signed = await token()
    const [version, body, signature] = signed.split('.') as [string, string, string]
    const claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'))
    const longer = Buffer.from(JSON.stringify({ ...claims, exp: claims.exp + 3000 })).toString(
      'base64url',
    )
    expect(
      rejection(() =>
        verifySignKey(`${version}.${longer}.${signature}`, {
          endpoint: 'game-odds',
          params,
          allowedSigners: [node],
          now,
        }),
      ),
    ).toBe('BAD_SIGNATURE')
    const flipped =
      signature.slice(0, 10) + (signature[10] === 'A' ? 'B' : 'A') + signature.slice(11)
    expect(
      rejection(() =>
        verifySignKey(`${version}.${body}.${flipped}`, {
          endpoint: 'game-odds',
          params,
          allowedSigners: [node],
          now,
        }),
      ),
    ).toBe('BAD_SIGNATURE')
    expect(
      rejection(() =>
        verifySignKey('v1.abc', { endpoint: 'game-odds', params, allowedSigners: [node], now }),
      ),
    ).toBe('MALFORMED')
    expect(
      rejection(() =>
        verifySignKey(`v1.${Buffer.from('{"rid":1}').toString('base64url')}.${signature}`, {
          endpoint: 'game-odds',
          params,
          allowedSigners: [node],
          now,
        }),
      ),
    ).toBe('MALFORMED')
  })
})

describe('##signKey and ##env substitution', () => {
  const staticSettings = parseSettings({ FEED_API_KEY: 'static-feed-key-123' })
  const signedSettings = parseSettings({
    SIGNKEY_MODE: 'signed',
    NODE_PRIVATE_KEY: nodeKey,
    SIGNKEY_TTL_SECONDS: '60',
  })

  it('static mode sends FEED_API_KEY', async () => {
    expect(
      await substituteQuery(
        { ...params, key: '##signKey' },
        { settings: staticSettings, endpoint: 'game-odds' },
      ),
    ).toEqual({ ...params, key: 'static-feed-key-123' })
    expect(
      await resolveKey(undefined, params, { settings: staticSettings, endpoint: 'game-odds' }),
    ).toBe('static-feed-key-123')
  })

  it('static mode without FEED_API_KEY names the setting', async () => {
    await expect(
      resolveKey('##signKey', params, { settings: parseSettings({}), endpoint: 'game-odds' }),
    ).rejects.toThrow(/FEED_API_KEY: required/)
  })

  it('signed mode sends a key bound to the request that verifies', async () => {
    const query = await substituteQuery(
      { ...params, key: '##signKey' },
      { settings: signedSettings, endpoint: 'game-odds', requestId: '0xabc', now },
    )
    const claims = verifySignKey(query.key!, {
      endpoint: 'game-odds',
      params: query,
      allowedSigners: [node],
      now,
    })
    expect(claims).toMatchObject({ rid: '0xabc', exp: now / 1000 + 60 })
  })

  it('##env:NAME reads only feed key variables', async () => {
    const env = { FEED_KEY_WEATHER: 'weather-key', NODE_PRIVATE_KEY: nodeKey }
    expect(
      await resolveKey('##env:FEED_KEY_WEATHER', params, {
        settings: staticSettings,
        env,
        endpoint: 'weather',
      }),
    ).toBe('weather-key')
    await expect(
      resolveKey('##env:NODE_PRIVATE_KEY', params, {
        settings: staticSettings,
        env,
        endpoint: 'weather',
      }),
    ).rejects.toMatchObject({ code: 'FORBIDDEN_ENV' })
    await expect(
      resolveKey('##env:FEED_KEY_MISSING', params, {
        settings: staticSettings,
        env,
        endpoint: 'weather',
      }),
    ).rejects.toThrow(/FEED_KEY_MISSING is not set/)
  })

  it('refuses placeholders outside key and literal client keys unless allowed', async () => {
    await expect(
      substituteQuery(
        { area: '##env:FEED_API_KEY', key: '##signKey' },
        { settings: staticSettings, endpoint: 'weather' },
      ),
    ).rejects.toThrow(/area: placeholders/)
    const refused = resolveKey('their-own-key', params, {
      settings: staticSettings,
      endpoint: 'weather',
    })
    await expect(refused).rejects.toMatchObject({ code: 'CLIENT_KEY_REFUSED' })
    await expect(refused).rejects.not.toThrow(/their-own-key/)
    const allowed = parseSettings({ ALLOW_CLIENT_KEYS: 'true' })
    expect(
      await resolveKey('their-own-key', params, { settings: allowed, endpoint: 'weather' }),
    ).toBe('their-own-key')
  })
})
