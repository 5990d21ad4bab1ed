import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { waitFor } from '../../src/dev/process.ts'
import type { RunRecord, RunStore } from '../../src/runner/run-record.ts'

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

/**
 * Calls a webhook job's runs endpoint at `base` with the operator's token and `{data: {result}}`,
 * and answers the HTTP status and, once fulfilled in `runs`, the run record.
 */
export async function callWebhookRun(
  base: string,
  externalJobId: string,
  token: string,
  result: number,
  runs: RunStore,
): Promise<{ status: number; run: RunRecord | undefined }> {
  const answer = await fetch(`${base}/v2/jobs/${externalJobId}/runs`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ data: { result } }),
  })
  if (answer.status !== 200) return { status: answer.status, run: undefined }
  const { data } = (await answer.json()) as { data: { id: string } }
  await waitFor(
    'the webhook run fulfilled',
    async () => (await runs.get(data.id))?.state === 'fulfilled',
    60_000,
    100,
  )
  return { status: answer.status, run: await runs.get(data.id) }
}
