import type { TestProject } from 'vitest/node'
import { compileContracts } from '../../src/chain/artifacts.ts'
import { redisAnswers, startPrivateRedis, type PrivateRedis } from '../../src/dev/redis.ts'

declare module 'vitest' {
  export interface ProvidedContext {
    /** A Redis every test may use; tests keep to their own key prefix and never flush it. */
    redisUrl: string
  }
}

let privateRedis: PrivateRedis | undefined

/** Makes a Redis available (the machine's, or a private one) and warms the contract cache once. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'
  if (!(await redisAnswers(redisUrl))) {
    privateRedis = await startPrivateRedis()
    redisUrl = privateRedis.url
  }
  project.provide('redisUrl', redisUrl)
  compileContracts()
  return async () => {
    await privateRedis?.stop()
  }
}
