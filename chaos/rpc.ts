/**
 * Plain JSON-RPC over HTTP for the harness's own calls to anvil (anvil_*, evm_*, txpool_*, and its
 * broadcasts), kept apart from the sender's client so the harness stands on none of the code it tests.
 */
export type RpcCall = readonly [method: string, params: readonly unknown[]]

/** One call's answer: its result, or the node's error message. */
export type RpcOutcome = { ok: true; result: unknown } | { ok: false; message: string }

interface RpcAnswer {
  id: number
  result?: unknown
  error?: { message?: string }
}

/** Posts `calls` as one batch; one outcome per call, in their order. Throws when the exchange fails. */
export async function rpcBatch(
  rpcUrl: string,
  calls: readonly RpcCall[],
  timeoutMs = 10_000,
): Promise<RpcOutcome[]> {
  // An empty batch is a JSON-RPC error, not an empty answer.
  if (calls.length === 0) return []
  const response = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(
      calls.map(([method, params], id) => ({ jsonrpc: '2.0', id, method, params })),
    ),
    signal: AbortSignal.timeout(timeoutMs),
  })
  if (!response.ok) throw new Error(`${rpcUrl} answered HTTP ${response.status}`)
  const answers = (await response.json()) as RpcAnswer[]
  if (!Array.isArray(answers)) throw new Error(`${rpcUrl} did not answer a batch`)
  const byId = new Map(answers.map((answer) => [answer.id, answer]))
  return calls.map(([method], id): RpcOutcome => {
    const answer = byId.get(id)
    if (!answer) return { ok: false, message: `${method}: no answer` }
    if (answer.error) return { ok: false, message: `${method}: ${answer.error.message ?? 'error'}` }
    return { ok: true, result: answer.result }
  })
}

/** One call's result; throws with the node's message when it refused. */
export async function rpc<T>(
  rpcUrl: string,
  method: string,
  params: readonly unknown[] = [],
): Promise<T> {
  const [outcome] = await rpcBatch(rpcUrl, [[method, params]])
  if (!outcome?.ok) throw new Error(outcome?.message ?? `${method}: no answer`)
  return outcome.result as T
}

/** Many calls, in batches of at most `batchSize`; one outcome per call, in their order. */
export async function rpcMany(
  rpcUrl: string,
  calls: readonly RpcCall[],
  batchSize = 100,
): Promise<RpcOutcome[]> {
  const outcomes: RpcOutcome[] = []
  for (let start = 0; start < calls.length; start += batchSize)
    outcomes.push(...(await rpcBatch(rpcUrl, calls.slice(start, start + batchSize))))
  return outcomes
}
