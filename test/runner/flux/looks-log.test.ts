import { JsonRpcProvider } from 'ethers'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { freePort } from '../../../src/dev/ports.ts'
import { loadJobSpec } from '../../../src/pipeline/job-spec/loader.ts'
import { fluxJobOf, isFluxJob } from '../../../src/runner/flux/flux-job.ts'
import { startFluxMonitor, type FluxMonitorOptions } from '../../../src/runner/flux/monitor.ts'

// The monitor's looks at a chain that does not answer (a port nothing listens on: each look is
// refused): said when they begin to fail, once a minute of the log's clock while they go on, with
// how many failed, and when a look works again; never a line a look.

const SPEC = `
type = "fluxmonitor"
schemaVersion = 1
name = "floor price"
contractAddress = "0x00000000000000000000000000000000000000aa"
threshold = 0.5
idleTimerPeriod = "1h"
pollTimerPeriod = "1s"
observationSource = """
    fetch [type="http" method=GET url="http://127.0.0.1:1/floor" timeout="1s"]
"""
`

/** Waits for a condition, polling; the bound only catches a hang. */
async function until(what: string, done: () => boolean, boundMs = 60_000): Promise<void> {
  const deadline = Date.now() + boundMs
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${boundMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe('the flux monitor at a chain that does not answer', () => {
  it('says when they begin to fail, once a minute while they fail, and when one works again', async () => {
    const lines: Array<{ level: number; msg: string; failures?: number }> = []
    const log = pino(
      { level: 'debug' },
      { write: (line: string) => void lines.push(JSON.parse(line)) },
    )
    const { job, problems } = loadJobSpec(SPEC, 'flux.toml')
    expect(problems).toEqual([])
    if (!job || !isFluxJob(job)) throw new Error('not a flux job')
    const provider = new JsonRpcProvider(`http://127.0.0.1:${await freePort()}`, 31337, {
      staticNetwork: true,
    })
    // The log's clock: ten seconds a reading, so a minute passes in a few looks.
    let now = 0
    // The monitor asks the sender only whether this process holds a key before it looks.
    const sender = {
      ownership: () => ({ available: 1 }),
    } as unknown as FluxMonitorOptions['sender']
    const monitor = startFluxMonitor({
      chainId: 31337,
      provider,
      sender,
      jobs: [fluxJobOf(job)],
      observe: () => Promise.reject(new Error('never observed: the chain is away')),
      log,
      tickMs: 5,
      now: () => (now += 10_000),
    })
    try {
      const stillLines = () => lines.filter((line) => line.msg.includes('still cannot look'))
      await until('two still-failing lines', () => stillLines().length >= 2)
      monitor.setJobs([])
      await until('the look that works again', () =>
        lines.some((line) => line.msg.startsWith('flux monitor: looking again after')),
      )
      const said = lines.map((line) => line.msg.replace(/\d+ looks? failed.*$/, 'N failed'))
      expect(said.slice(0, 4)).toEqual([
        'flux monitor: a look at the chain failed; trying again at every tick',
        'flux monitor: still cannot look at the chain (N failed',
        'flux monitor: still cannot look at the chain (N failed',
        expect.stringMatching(
          /^flux monitor: (still cannot look|looking again after \d+ failed looks)/,
        ),
      ])
      const [first, second] = stillLines()
      // A minute of the log's clock between lines: six readings of ten seconds, a failed look each.
      expect(second!.failures! - first!.failures!).toBe(6)
      expect(lines.filter((line) => line.level < 30)).toEqual([])
    } finally {
      await monitor.stop()
      provider.destroy()
    }
  })
})
