import { readFileSync } from 'node:fs'
import { join } from 'node:path'

/**
 * Chainlink's published webhook example with `externalJobID` set and its bridge left out: the run's
 * result is what multiply makes of $(jobRun.requestBody) (`{"data": {"result": x}}` gives x × 100).
 */
export function webhookSpecWithoutBridge(externalJobId: string): string {
  return readFileSync(join(import.meta.dirname, '../pipeline/specs/push/docs-webhook.toml'), 'utf8')
    .replace(/\s*send_to_bridge \[[^\n]*\n/, '\n')
    .replace(' -> send_to_bridge', '')
    .replace('schemaVersion   = 1', `schemaVersion   = 1\nexternalJobID = "${externalJobId}"`)
}
