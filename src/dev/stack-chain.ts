import { ANVIL_PRIVATE_KEYS, startAnvil, type Anvil } from './anvil.ts'
import { deployDemoTokens, type DemoTokens } from '../feeds/server/blockchain/demo-tokens.ts'
import { deployDevContracts, type DevContracts } from './deploy.ts'
import { startPoolBackstop } from './pool-backstop.ts'
import { onPreferredPort } from './ports.ts'
import { deployPushContracts, type PushContracts } from './push-feeds.ts'

/** What each part of a stack leaves to undo; the stack runs them newest first. */
export type Stops = Array<() => Promise<void>>

export interface StackChain {
  rpcUrl: string
  nodeKeys: readonly string[]
  contracts: DevContracts
  demoTokens?: DemoTokens
  /** The contracts of the push jobs in jobs/push/, when the stack runs them. */
  pushContracts?: PushContracts
}

/**
 * The chain (`rpcUrl`, else anvil started here) with the dev contracts, on a new chain the demo
 * tokens, and with `push` the push jobs' contracts.
 */
export async function stackChain(
  given: { rpcUrl?: string; preferredPort?: number; nodeKeys?: readonly string[]; push?: boolean },
  stops: Stops,
): Promise<StackChain> {
  const rpcUrl = given.rpcUrl || (await devChain(given.preferredPort, stops)).rpcUrl
  const nodeKeys = given.nodeKeys ?? [ANVIL_PRIVATE_KEYS[1]]
  const contracts = await deployDevContracts(rpcUrl, { nodeKeys })
  stops.push(async () => contracts.provider.destroy())
  const demoTokens = contracts.reused ? undefined : await deployDemoTokens(contracts.deployer)
  const pushContracts = given.push ? await deployPushContracts(contracts) : undefined
  return { rpcUrl, nodeKeys, contracts, demoTokens, pushContracts }
}

/** An anvil chain for the stack (no RPC_URL given), with the pool backstop beside it. */
async function devChain(preferredPort: number | undefined, stops: Stops): Promise<Anvil> {
  const anvil: Anvil = await onPreferredPort(preferredPort, (port) => startAnvil({ port }))
  stops.push(() => anvil.stop())
  const backstop = startPoolBackstop(anvil.rpcUrl)
  stops.push(async () => backstop.stop())
  return anvil
}
