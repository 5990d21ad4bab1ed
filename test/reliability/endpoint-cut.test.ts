import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { waitFor } from '../../src/dev/process.ts'
import { runCut, useCutScenario } from './cut-scenario.ts'
import { recordFigures, runsNotFulfilled } from './support.ts'

const COUNT = 60

/**
 * One chain behind two RPC endpoints (CHAINS_FILE), the first (the preferred one) a TCP proxy the
 * test cuts for 15 s in the middle of a paced run, with two runner processes. Reads fail over to the
 * second endpoint and broadcasts reach it: nothing is lost, nothing is fulfilled twice (the chain's
 * OracleResponse logs), and each process says at most 3 lines about the outage (down, back).
 */
describe('one of two RPC endpoints cut for 15 s during a paced run', () => {
  const scenario = useCutScenario({
    prefix: 'rel-endpoint-cut',
    runnerEnv: (stack, proxy) => {
      const chainsFile = join(mkdtempSync(join(tmpdir(), 'endpoint-cut-')), 'chains.toml')
      writeFileSync(
        chainsFile,
        `[[chains]]
chain_id = ${stack.contracts.chainId}
keys_env = ["NODE_PRIVATE_KEY"]
endpoints = [{ url = "${proxy.url}" }, { url = "${stack.env.RPC_URL}" }]
`,
      )
      return {
        RPC_URL: '',
        CHAINS_FILE: chainsFile,
        // Info: the back line of an outage is one (the down line is a warning).
        LOG_LEVEL: 'info',
      }
    },
  })

  it('60 requests at 10/s with the preferred endpoint cut: none lost, none twice, the outage in a few lines', async () => {
    const { stack, proxy, runners } = scenario
    const linesBefore = runners.map((runner) => runner.output().split('\n').length)
    const { requestIds, figures } = await runCut(scenario, COUNT)
    expect(await runsNotFulfilled(stack, requestIds, 120_000)).toEqual([])

    // The endpoint comes back into the pool: its back line is there once a probe finds it.
    await waitFor(
      'every runner to say the endpoint answers again',
      async () => runners.every((runner) => /answers again/.test(runner.output())),
      60_000,
    )
    const runLines = runners.map((runner, index) =>
      runner.output().split('\n').slice(linesBefore[index]).filter(Boolean),
    )
    const outage = runLines.map((lines) =>
      lines
        .filter((line) => line.includes(`:${proxy.port}`) || /ECONN/.test(line))
        .map((line) => (JSON.parse(line) as { msg?: string }).msg ?? line),
    )
    const outageLines = outage.map((lines) => lines.length)
    const errorLines = runLines.map((lines) => lines.filter((line) => /"level":(50|60)/.test(line)))
    if (process.env.ENDPOINT_CUT_SHOW_LOGS)
      for (const lines of runLines) console.log(lines.join('\n'))
    recordFigures('endpoint-cut', { ...figures(), outageLinesPerRunner: outageLines })
    for (const lines of outage) {
      expect(lines.length, lines.join('\n')).toBeGreaterThanOrEqual(1)
      expect(lines.length, lines.join('\n')).toBeLessThanOrEqual(3)
    }
    expect(errorLines).toEqual([[], []])
  }, 600_000)
})
