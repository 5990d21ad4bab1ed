import { randomBytes } from 'node:crypto'
import { Redis } from 'ioredis'
import { afterAll, describe, expect, it } from 'vitest'
import { RunStore } from '../../src/runner/run-record.ts'
import { testRedisUrl, uniquePrefix } from '../support/redis.ts'

describe('run records', () => {
  const redis = new Redis(testRedisUrl())
  const prefix = uniquePrefix('runs')
  const store = new RunStore(redis, prefix)
  const base = {
    chainId: 31337,
    operator: '0xop',
    job: 'game-odds',
    externalJobId: 'x',
    requester: '0xr',
    payment: '1',
    blockNumber: 1,
    requestTxHash: '0xt',
  }

  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`)
    if (keys.length) await redis.del(...keys)
    redis.disconnect()
  })

  it('records each state with its time and keeps task outputs', async () => {
    await store.update('0xAA', { ...base, state: 'received' })
    await store.update('0xaa', { state: 'running' })
    const summary = await store.update('0xaa', {
      state: 'fulfilled',
      txHash: '0xfeed',
      tasks: [{ id: 'fetch', type: 'bridge', output: '42' }],
    })
    expect(summary).toEqual({
      requestId: '0xaa',
      state: 'fulfilled',
      job: 'game-odds',
      txHash: '0xfeed',
    })
    const run = await store.get('0xaa')
    expect(run?.job).toBe('game-odds')
    expect(Object.keys(run?.times ?? {}).sort()).toEqual(['fulfilled', 'received', 'running'])
    expect(run?.tasks).toEqual([{ id: 'fetch', type: 'bridge', output: '42' }])
  })

  it("keeps the stored tasks before tasksFrom and replaces the rest: a run's last write sends only its new tasks", async () => {
    const task = (id: string) => ({ id, type: 'any', output: id })
    await store.update('0xee', { ...base, state: 'running' })
    await store.update('0xee', { state: 'sent', tasks: [task('a'), task('b')] })
    await store.update('0xee', { state: 'fulfilled', tasks: [task('c')], tasksFrom: 2 })
    const run = await store.get('0xee')
    expect(run?.tasks).toEqual([task('a'), task('b'), task('c')])
    expect(run).not.toHaveProperty('tasksFrom')
    // A stored list longer than tasksFrom is cut there (a retried run's earlier tasks go).
    await store.update('0xef', { ...base, state: 'sent', tasks: [task('a'), task('b')] })
    await store.update('0xef', { tasks: [task('x')], tasksFrom: 1 })
    expect((await store.get('0xef'))?.tasks).toEqual([task('a'), task('x')])
    // A run Redis lost meanwhile is written again with the tasks the patch has.
    await store.update('0xf0', { state: 'fulfilled', tasks: [task('c')], tasksFrom: 2 })
    const lost = await store.get('0xf0')
    expect(lost?.tasks).toEqual([task('c')])
    expect(lost).not.toHaveProperty('tasksFrom')
  })

  it('creates a run only when there is none: a request seen again keeps the run it has', async () => {
    const created = await store.create('0xdd', { ...base, state: 'received' })
    expect(created).toEqual({ requestId: '0xdd', state: 'received', job: 'game-odds' })
    await store.update('0xdd', { state: 'running' })
    const again = await store.create('0xdd', { ...base, job: 'other', state: 'received' })
    expect(again).toMatchObject({ state: 'running', job: 'game-odds' })
    const run = await store.get('0xdd')
    expect(run?.state).toBe('running')
    expect(Object.keys(run?.times ?? {}).sort()).toEqual(['received', 'running'])
  })

  it('opens a run in a new round when its request was made again with another cancelExpiration (a reorg moved it)', async () => {
    const first = { ...base, state: 'received' as const, cancelExpiration: '1000' }
    await store.create('0xa1b2', first)
    await store.update('0xa1b2', { state: 'fulfilled', txHash: '0xold' })
    // Delivered again as it was: nothing changes.
    expect(await store.create('0xa1b2', first)).toMatchObject({
      state: 'fulfilled',
      txHash: '0xold',
    })
    // Made again in block 9, five seconds later: a new round, run again.
    const again = await store.create('0xa1b2', {
      ...first,
      blockNumber: 9,
      requestTxHash: '0xt2',
      cancelExpiration: '1005',
    })
    expect(again).toMatchObject({ state: 'received', round: 1 })
    expect(again.txHash).toBeUndefined()
    const run = await store.get('0xa1b2')
    expect(run).toMatchObject({ blockNumber: 9, requestTxHash: '0xt2', cancelExpiration: '1005' })
    expect(run?.reason).toBe('made again in block 9 (a reorg moved the request): run again')
    // Every process that sees the new log delivers it: the first opened the round, the rest find it.
    expect(
      await store.create('0xa1b2', { ...first, blockNumber: 9, cancelExpiration: '1005' }),
    ).toMatchObject({ round: 1 })
  })

  it('makes a run Redis lost again from a write that leaves its state unsaid: received, whole', async () => {
    // A run's "will retry" write after a FLUSHALL: the reconciler reads the state and the block.
    await store.update('0xf1', { ...base, reason: 'will retry: the key changed hands' })
    const run = await store.get('0xf1')
    expect(run).toMatchObject({ state: 'received', blockNumber: 1, job: 'game-odds' })
    expect((await store.recent(100)).map((recent) => recent.requestId)).toContain('0xf1')
  })

  it("does not merge a write of the round before into the new round's run", async () => {
    const first = { ...base, state: 'received' as const, cancelExpiration: '2000' }
    await store.create('0xa1b3', first)
    await store.create('0xa1b3', { ...first, blockNumber: 9, cancelExpiration: '2005' })
    // The first round's run, still going, writes what it did: the second round's run is not it.
    const stale = await store.update('0xa1b3', { ...first, state: 'sent' })
    expect(stale).toMatchObject({ state: 'received', round: 1 })
    expect(await store.get('0xa1b3')).toMatchObject({ blockNumber: 9, cancelExpiration: '2005' })
    // The round's own write goes in.
    const own = await store.update('0xa1b3', { ...first, cancelExpiration: '2005', state: 'sent' })
    expect(own.state).toBe('sent')
  })

  it('never moves a final run again', async () => {
    await store.update('0xbb', { ...base, state: 'received' })
    await store.update('0xbb', { state: 'cancelled', reason: 'cancelled by requester' })
    const after = await store.update('0xbb', { state: 'running' })
    expect(after).toEqual({
      requestId: '0xbb',
      state: 'cancelled',
      job: 'game-odds',
      reason: 'cancelled by requester',
    })
    expect((await store.get('0xbb'))?.reason).toBe('cancelled by requester')
  })

  it('lists the newest runs first', async () => {
    await store.update('0xcc', { ...base, state: 'received' })
    const recent = await store.recent(10)
    expect(recent[0]?.requestId).toBe('0xcc')
    expect(recent.map((run) => run.requestId)).toContain('0xaa')
  })

  it('keeps the index of recent runs near its bound of 10,000 while trimming on few creates', async () => {
    const indexPrefix = `${prefix}-index`
    const indexed = new RunStore(redis, indexPrefix)
    try {
      // Request ids are hashes: one create in 64 (by the id's last byte) trims the index.
      for (let chunk = 0; chunk < 12; chunk++)
        await Promise.all(
          Array.from({ length: 1_000 }, () =>
            indexed.create(`0x${randomBytes(32).toString('hex')}`, { ...base, state: 'received' }),
          ),
        )
      const size = await redis.zcard(`${indexPrefix}:runs`)
      expect(size).toBeGreaterThanOrEqual(10_000)
      expect(size).toBeLessThan(11_000)
    } finally {
      const keys = await redis.keys(`${indexPrefix}:*`)
      for (let at = 0; at < keys.length; at += 1_000) await redis.del(...keys.slice(at, at + 1_000))
    }
  })
})

describe('run records of several chains', () => {
  const redis = new Redis(testRedisUrl())
  const prefix = uniquePrefix('runs-chains')
  const base = {
    operator: '0xop',
    job: 'game-odds',
    externalJobId: 'x',
    requester: '0xr',
    payment: '1',
    blockNumber: 1,
    requestTxHash: '0xt',
  }

  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`)
    if (keys.length) await redis.del(...keys)
    redis.disconnect()
  })

  it('keeps one request id on two chains apart, and lists both', async () => {
    const one = new RunStore(redis, prefix, 1)
    const other = new RunStore(redis, prefix, 137)
    await one.create('0xAB', { ...base, chainId: 1, state: 'received' })
    await other.create('0xab', { ...base, chainId: 137, state: 'received' })
    await one.update('0xab', { state: 'fulfilled', txHash: '0x1' })
    expect((await one.get('0xab'))?.state).toBe('fulfilled')
    expect((await other.get('0xab'))?.state).toBe('received')
    expect((await other.createdSince(0)).map((run) => run.chainId)).toEqual([137])
    const all = new RunStore(redis, prefix)
    expect((await all.recent(10)).map((run) => run.chainId).sort()).toEqual([1, 137])
    expect((await all.findByPrefix('0xab', 5)).sort()).toEqual(['137:0xab', '1:0xab'].sort())
    expect((await all.get('137:0xab'))?.chainId).toBe(137)
    expect(await one.findByPrefix('ab')).toEqual(['0xab'])
  })
})
