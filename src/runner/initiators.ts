import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import type { Redis } from 'ioredis'
import { z } from 'zod'

/**
 * External initiators, as a Chainlink node keeps them: a name, an access key and a secret the
 * initiator sends as `X-Chainlink-EA-AccessKey` and `X-Chainlink-EA-Secret`. The secret is shown
 * once, when the initiator is created; Redis keeps only its SHA-256 (the secret is 48 random bytes:
 * a slow hash adds nothing against guessing it, and a check costs one hash).
 */
const storedSchema = z.object({
  name: z.string(),
  accessKey: z.string(),
  secretHash: z.string(),
  createdAt: z.number(),
})

export const INITIATOR_NAME = /^[A-Za-z0-9_-]{1,64}$/

const keyOf = (prefix: string, accessKey: string) => `${prefix}:initiators:key:${accessKey}`
const nameOf = (prefix: string, name: string) => `${prefix}:initiators:name:${name}`
const hashOf = (secret: string) => createHash('sha256').update(secret).digest('hex')

/** Creates an initiator; answers its pair, which nothing keeps but the caller. Undefined when the name is taken. */
export async function createInitiator(
  redis: Redis,
  prefix: string,
  name: string,
): Promise<{ accessKey: string; secret: string } | undefined> {
  const accessKey = randomBytes(16).toString('hex')
  const secret = randomBytes(48).toString('base64')
  const stored = JSON.stringify({
    name,
    accessKey,
    secretHash: hashOf(secret),
    createdAt: Date.now(),
  })
  if ((await redis.set(nameOf(prefix, name), accessKey, 'NX')) !== 'OK') return undefined
  await redis.set(keyOf(prefix, accessKey), stored)
  return { accessKey, secret }
}

/** The initiator's name when the pair is one, else undefined (compared in constant time). */
export async function initiatorOf(
  redis: Redis,
  prefix: string,
  accessKey: string,
  secret: string,
): Promise<string | undefined> {
  if (!/^[0-9a-f]{32}$/.test(accessKey)) return undefined
  const text = await redis.get(keyOf(prefix, accessKey))
  if (text === null) return undefined
  const stored = storedSchema.parse(JSON.parse(text))
  const given = Buffer.from(hashOf(secret), 'hex')
  const kept = Buffer.from(stored.secretHash, 'hex')
  return given.length === kept.length && timingSafeEqual(given, kept) ? stored.name : undefined
}
