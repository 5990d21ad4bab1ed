/**
 * Which chain a spec runs on, decided from its evmChainID and the chain ids this runner serves.
 * The runner serves one chain today (RPC_URL); a multi-chain configuration passes its whole list.
 */
export type ChainChoice =
  | { kind: 'serve'; chainId: number; notice?: string }
  | { kind: 'other-chain' }
  | { kind: 'refuse'; message: string }

export function chooseChain(
  spec: { name: string; evmChainID?: bigint },
  configuredChainIds: readonly number[],
): ChainChoice {
  if (spec.evmChainID !== undefined) {
    const wanted = Number(spec.evmChainID)
    return configuredChainIds.includes(wanted)
      ? { kind: 'serve', chainId: wanted }
      : { kind: 'other-chain' }
  }
  const [only, ...others] = configuredChainIds
  if (only !== undefined && others.length === 0)
    return {
      kind: 'serve',
      chainId: only,
      notice: `job ${JSON.stringify(spec.name)} has no evmChainID: it runs on chain ${only}, the one chain this runner serves`,
    }
  return {
    kind: 'refuse',
    message: `evmChainID is required when the runner serves ${configuredChainIds.length === 0 ? 'no chain' : 'several chains'} (configured chain ids: ${configuredChainIds.join(', ') || 'none'}): add evmChainID = "<one of them>" to say which chain's Operator this job answers`,
  }
}
