import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runFeedrunner } from './support/cli.ts'

/**
 * Issue 55, point 2: `jobs run` (the documented way to debug a quarantined request) ran a path that
 * multiplies on the operator's machine to 3 GB in 29 s, still climbing. It now runs pure tasks in the
 * runner's isolates under the runner's budgets, and says which bound stopped the run.
 */
const spec = `type = "directrequest"
schemaVersion = 1
name = "a requester's path"
externalJobID = "0eec7e1d-d0d2-476c-a1a8-72dfb6633f46"
contractAddress = "0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512"
evmChainID = "31337"
observationSource = """
    decode_log   [type=ethabidecodelog abi="OracleRequest(bytes32 indexed specId, address requester, bytes32 requestId, uint256 payment, address callbackAddr, bytes4 callbackFunctionId, uint256 cancelExpiration, uint256 dataVersion, bytes data)" data="$(jobRun.logData)" topics="$(jobRun.logTopics)"]
    decode_cbor  [type=cborparse data="$(decode_log.data)"]
    parse        [type=jsonparse path="$(decode_cbor.path)" data="$(decode_cbor.doc)" allowJSONPath="true"]
    decode_log -> decode_cbor -> parse
"""
`

/** The document (60 levels) and path (`$` and forty `..*`), as request parameters. */
function attack(): string[] {
  let document: unknown = 1
  for (let level = 0; level < 60; level++) document = { a: document, b: [level, level] }
  return ['--param', `path=$${'..*'.repeat(40)}`, '--param', `doc=${JSON.stringify(document)}`]
}

describe('jobs run under the runner’s bounds', { timeout: 300_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'feedrunner-jobs-run-bounds-'))
  const file = join(dir, 'path.toml')
  writeFileSync(file, spec)

  it('stops a path that multiplies at PATH_MAX_VALUES and says so', async () => {
    const result = await runFeedrunner(['jobs', 'run', file, ...attack()], {})
    expect(result.code).toBe(1)
    expect(result.stdout).toMatch(/FAIL parse .*more than 100000 values \(PATH_MAX_VALUES\)/)
    expect(result.stderr).toContain(
      'stopped by a bound: task parse passed PATH_MAX_VALUES, as the runner would stop it',
    )
    const json = await runFeedrunner(['jobs', 'run', file, '--json', ...attack()], {})
    const output = JSON.parse(json.stdout) as { tasks: Array<{ id: string; bound?: string }> }
    expect(output.tasks.find((task) => task.id === 'parse')?.bound).toBe('PATH_MAX_VALUES')
  })

  it("runs pure tasks in the runner's isolate: with the budget lifted, the isolate's heap ends it", async () => {
    // As an operator may lift a budget: what is left to hold is the isolate, as on the runner.
    const result = await runFeedrunner(['jobs', 'run', file, ...attack()], {
      PATH_MAX_VALUES: '1000000000',
      RUN_ISOLATE_MEMORY_MB: '64',
    })
    expect(result.code).toBe(1)
    expect(result.stdout).toMatch(
      /FAIL parse .*its isolate died: what it built passed its heap of RUN_ISOLATE_MEMORY_MB=64/,
    )
    expect(result.stderr).toContain('stopped by a bound: task parse passed RUN_ISOLATE_MEMORY_MB')
  })
})
