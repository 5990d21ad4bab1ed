import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { redisAnswers, startPrivateRedis } from '../../src/dev/redis.ts'

describe('a private redis-server', () => {
  it('answers while it runs, and leaves no temporary directory behind when stopped', async () => {
    const redis = await startPrivateRedis()
    expect(await redisAnswers(redis.url)).toBe(true)
    expect(existsSync(redis.dir)).toBe(true)
    await redis.stop()
    expect(await redisAnswers(redis.url)).toBe(false)
    expect(existsSync(redis.dir)).toBe(false)
  })

  it('keeps a directory it was given', async () => {
    const persistDir = mkdtempSync(join(tmpdir(), 'feedrunner-redis-kept-'))
    try {
      const redis = await startPrivateRedis({ persistDir })
      await redis.stop()
      expect(existsSync(persistDir)).toBe(true)
    } finally {
      rmSync(persistDir, { recursive: true, force: true })
    }
  })
})
