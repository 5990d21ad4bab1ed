import { id, verifyMessage, Wallet } from 'ethers'
import { describe, expect, it } from 'vitest'
import { FeedrunnerError } from '../../src/config/errors.ts'
import { parseSettings } from '../../src/config/settings.ts'
import { ANVIL_PRIVATE_KEYS } from '../../src/dev/anvil.ts'
import {
  createSignKey,
  hashParams,
  isPlaceholder,
  isSignedKey,
  resolveKey,
  SignKeyError,
  substituteQuery,
  verifySignKey,
} from '../../src/signkey/index.ts'

// The edges of signed keys: the wire format a feed operator in another language relies on, each
// bound at its exact value, and each refusal by its code, kind and message.

const wallet = new Wallet(ANVIL_PRIVATE_KEYS[1]!)
const nowSeconds = Date.UTC(2026, 0, 1) / 1000
const now = nowSeconds * 1000
const params = { region: 'england', sport: 'soccer' }
const accept = { endpoint: 'game-odds', params, allowedSigners: [wallet.address], now }

function b64(text: string): string {
  return Buffer.from(text).toString('base64url')
}

/** A token as the format says: `v1.<claims>.<signature of "feedrunner-signkey:v1.<claims>">`. */
async function signed(claims: Record<string, unknown>, signer = wallet): Promise<string> {
  const body = `v1.${b64(JSON.stringify(claims))}`
  const signature = await signer.signMessage(`feedrunner-signkey:${body}`)
  return `${body}.${Buffer.from(signature.slice(2), 'hex').toString('base64url')}`
}

function claims(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    rid: 'req-1',
    ep: 'game-odds',
    ph: hashParams(params),
    node: wallet.address,
    iat: nowSeconds,
    exp: nowSeconds + 300,
    jti: 'abcdefgh12345678',
    ...overrides,
  }
}

function refusal(token: string, options: Partial<typeof accept> & { maxTtlSeconds?: number } = {}) {
  try {
    verifySignKey(token, { ...accept, ...options })
  } catch (error) {
    if (error instanceof SignKeyError) return `${error.code}: ${error.message}`
    throw error
  }
  return 'accepted'
}

describe('the wire format', () => {
  it('signs "feedrunner-signkey:" and the body with EIP-191, so any EIP-191 library checks it', async () => {
    const token = await createSignKey({
      privateKey: wallet.privateKey,
      requestId: 'req-1',
      endpoint: 'game-odds',
      params,
      ttlSeconds: 60,
      now,
    })
    const [version, body, signature] = token.split('.') as [string, string, string]
    const recovered = verifyMessage(
      `feedrunner-signkey:${version}.${body}`,
      `0x${Buffer.from(signature, 'base64url').toString('hex')}`,
    )
    expect(recovered).toBe(wallet.address)
    // And a token made by another implementation of the format is accepted.
    expect(refusal(await signed(claims()))).toBe('accepted')
  })

  it('hashes the parameters as keccak256 of the JSON of their entries sorted by name', () => {
    const expected = id('[["a","1"],["b","2"],["c","3"],["d","4"]]')
    const orders: Record<string, string>[] = [
      { a: '1', b: '2', c: '3', d: '4' },
      { d: '4', c: '3', b: '2', a: '1' },
      { c: '3', a: '1', d: '4', b: '2', key: 'not hashed' },
      { b: '2', d: '4', a: '1', c: '3' },
    ]
    for (const order of orders) expect(hashParams(order)).toBe(expected)
  })

  it('tells a signed key by its version and three parts', () => {
    expect(isSignedKey('v1.abc.def')).toBe(true)
    for (const value of ['v1.abc', 'v1.a.b.c', 'v2.abc.def', 'xv1.abc.def', 'a.v1.b', 'static-key'])
      expect(isSignedKey(value), value).toBe(false)
  })

  it('keeps a request id of 200 characters and binds a longer one by its hash', async () => {
    const make = (requestId: string) =>
      createSignKey({
        privateKey: wallet.privateKey,
        requestId,
        endpoint: 'e',
        params,
        ttlSeconds: 60,
        now,
      })
    const verified = async (requestId: string) =>
      verifySignKey(await make(requestId), { ...accept, endpoint: 'e' }).rid
    expect(await verified('r'.repeat(200))).toBe('r'.repeat(200))
    expect(await verified('r'.repeat(201))).toBe(id('r'.repeat(201)))
  })
})

describe('malformed tokens', () => {
  it('refuses a token that is not three base64url parts after v1', async () => {
    const good = await signed(claims())
    const [, body, signature] = good.split('.') as [string, string, string]
    const malformed = 'MALFORMED: signed key is malformed (expected v1.<claims>.<signature>)'
    for (const token of [
      'v1.abc',
      `${good}.extra`,
      `v2.${body}.${signature}`,
      `v1.${body}+.${signature}`,
      `v1.${body}.${signature}=`,
      `v1.=${body}.${signature}`,
      `v1.${body}.=${signature}`,
      `v1..${signature}`,
    ])
      expect(refusal(token), token).toBe(malformed)
  })

  it('says what is wrong inside: claims that are not JSON, a missing claim, a short signature', async () => {
    const good = await signed(claims())
    const [, , signature] = good.split('.') as [string, string, string]
    expect(refusal(`v1.${b64('not json')}.${signature}`)).toBe(
      'MALFORMED: signed key claims are not JSON',
    )
    expect(refusal(`v1.${b64('{"rid":1}')}.${signature}`)).toBe(
      'MALFORMED: signed key claims are invalid (rid)',
    )
    expect(refusal(`v1.${b64('[]')}.${signature}`)).toBe(
      'MALFORMED: signed key claims are invalid ()',
    )
    const short = Buffer.from(signature, 'base64url').subarray(0, 64).toString('base64url')
    expect(refusal(good.replace(signature, short))).toBe(
      'MALFORMED: signed key signature must be 65 bytes',
    )
  })

  it('refuses claims with a malformed hash, node or id, even when signed', async () => {
    const hex = hashParams(params).slice(2)
    for (const bad of [
      { ph: `x0x${hex}` },
      { ph: `0x${hex}0` },
      { ph: `0x${hex.toUpperCase()}` },
      { node: `x${wallet.address}` },
      { node: `${wallet.address}0` },
      { jti: 'abcdefg' },
      { jti: 'a'.repeat(65) },
      { jti: '/abcdefgh' },
      { jti: 'abcdefgh/' },
      { rid: '' },
      { ep: '' },
      { iat: -1 },
      { exp: 0 },
    ]) {
      const field = Object.keys(bad)[0]
      expect(refusal(await signed(claims(bad))), JSON.stringify(bad)).toBe(
        `MALFORMED: signed key claims are invalid (${field})`,
      )
    }
    expect(refusal(await signed(claims({ jti: 'a'.repeat(64) })))).toBe('accepted')
  })

  it('refuses a signature that recovers no address, or another than the node named', async () => {
    const good = await signed(claims())
    const [version, body] = good.split('.') as [string, string]
    const zeros = Buffer.alloc(65).toString('base64url')
    expect(refusal(`${version}.${body}.${zeros}`)).toBe(
      'BAD_SIGNATURE: signed key signature cannot be verified',
    )
    const other = new Wallet(ANVIL_PRIVATE_KEYS[2]!)
    expect(refusal(await signed(claims(), other), { allowedSigners: [other.address] })).toBe(
      'BAD_SIGNATURE: signed key was not signed by the node it names (tampered)',
    )
  })
})

describe('the bounds of a valid key', () => {
  it('accepts any case of an accepted signer and names one that is not', async () => {
    const token = await signed(claims())
    expect(
      refusal(token, { allowedSigners: [wallet.address.toUpperCase().replace('0X', '0x')] }),
    ).toBe('accepted')
    expect(refusal(token, { allowedSigners: [] })).toBe(
      `UNKNOWN_SIGNER: signed key signer ${wallet.address} is not an accepted node`,
    )
  })

  it('expires at exp, to the second', async () => {
    const token = await signed(claims())
    expect(refusal(token, { now: now + 299_999 })).toBe('accepted')
    expect(refusal(token, { now: now + 300_000 })).toBe('EXPIRED: signed key has expired')
  })

  it('allows 30 seconds of clock skew, and not 31', async () => {
    expect(refusal(await signed(claims({ iat: nowSeconds + 30 })))).toBe('accepted')
    expect(refusal(await signed(claims({ iat: nowSeconds + 31 })))).toBe(
      'NOT_YET_VALID: signed key is issued in the future',
    )
  })

  it('allows a lifetime of an hour by default, or the maximum given, and not a second more', async () => {
    const life = (seconds: number) => signed(claims({ exp: nowSeconds + seconds }))
    expect(refusal(await life(3600))).toBe('accepted')
    expect(refusal(await life(3601))).toBe('TTL_TOO_LONG: signed key lifetime is too long')
    expect(refusal(await life(61), { maxTtlSeconds: 60 })).toBe(
      'TTL_TOO_LONG: signed key lifetime is too long',
    )
    expect(refusal(await life(60), { maxTtlSeconds: 60 })).toBe('accepted')
  })

  it('names the endpoint it was issued for, and refuses other parameters', async () => {
    const token = await signed(claims())
    expect(refusal(token, { endpoint: 'boxscores' })).toBe(
      'WRONG_ENDPOINT: signed key was issued for endpoint game-odds, not boxscores',
    )
    expect(refusal(token, { params: { ...params, sport: 'tennis' } })).toBe(
      'PARAMS_MISMATCH: signed key was issued for other parameters',
    )
  })
})

describe('errors and substitution', () => {
  const settings = parseSettings({ FEED_API_KEY: 'static-feed-key-123' })
  const context = { settings, endpoint: 'weather' }

  it('is a FeedrunnerError: config for a missing secret or forbidden variable, else not authorised', () => {
    const kinds = (
      ['MISSING_SECRET', 'FORBIDDEN_ENV', 'EXPIRED', 'CLIENT_KEY_REFUSED'] as const
    ).map((code) => new SignKeyError(code, 'm'))
    expect(kinds.every((error) => error instanceof FeedrunnerError)).toBe(true)
    expect(kinds.map((error) => [error.name, error.code, error.kind])).toEqual([
      ['SignKeyError', 'MISSING_SECRET', 'config'],
      ['SignKeyError', 'FORBIDDEN_ENV', 'config'],
      ['SignKeyError', 'EXPIRED', 'not_authorised'],
      ['SignKeyError', 'CLIENT_KEY_REFUSED', 'not_authorised'],
    ])
  })

  it('knows both placeholders, in key only', async () => {
    expect(isPlaceholder('##signKey')).toBe(true)
    expect(isPlaceholder('##env:FEED_API_KEY')).toBe(true)
    expect(isPlaceholder('#signKey')).toBe(false)
    for (const value of ['##signKey', '##env:FEED_API_KEY'])
      await expect(substituteQuery({ area: value }, context)).rejects.toMatchObject({
        code: 'FORBIDDEN_ENV',
        message: 'area: placeholders are only substituted in key',
      })
  })

  it('sends the node key for an empty key, and names what needed a missing one', async () => {
    expect(await resolveKey('', params, context)).toBe('static-feed-key-123')
    await expect(
      resolveKey('', params, { settings: parseSettings({}), endpoint: 'e' }),
    ).rejects.toThrow('FEED_API_KEY: required for ##signKey in static mode (not set)')
    const signedMode = parseSettings({ SIGNKEY_MODE: 'signed' })
    await expect(
      resolveKey('##signKey', params, { settings: signedMode, endpoint: 'e' }),
    ).rejects.toThrow('NODE_PRIVATE_KEY: required for ##signKey in signed mode (not set)')
  })

  it('reads only FEED_API_KEY and FEED_KEY_* variables, set and not empty', async () => {
    const env = {
      FEED_API_KEY_OLD: 'x',
      MY_FEED_API_KEY: 'x',
      FEED_KEY_EMPTY: '',
      FEED_API_KEY: 'k',
    }
    expect(await resolveKey('##env:FEED_API_KEY', params, { ...context, env })).toBe('k')
    for (const name of ['FEED_API_KEY_OLD', 'MY_FEED_API_KEY', 'FEED_KEY_a'])
      await expect(resolveKey(`##env:${name}`, params, { ...context, env })).rejects.toMatchObject({
        code: 'FORBIDDEN_ENV',
        message: `key: ##env:${name} is not allowed (only FEED_API_KEY or FEED_KEY_* variables)`,
      })
    await expect(
      resolveKey('##env:FEED_KEY_EMPTY', params, { ...context, env }),
    ).rejects.toMatchObject({
      code: 'MISSING_SECRET',
      message: 'key: environment variable FEED_KEY_EMPTY is not set',
    })
  })

  it('repeats at most 64 characters of a refused variable name', async () => {
    const name = 'X'.repeat(100)
    await expect(resolveKey(`##env:${name}`, params, context)).rejects.toThrow(
      `key: ##env:${'X'.repeat(64)} is not allowed`,
    )
  })

  it('refuses a literal key, saying how to send one', async () => {
    await expect(resolveKey('their-key', params, context)).rejects.toThrow(
      'key: a literal key from the request is not accepted (send ##signKey, or set ALLOW_CLIENT_KEYS=true)',
    )
  })
})
