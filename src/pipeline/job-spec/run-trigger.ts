/**
 * What starts a run: an `OracleRequest` log, a schedule's tick, a call to the runs endpoint, or a
 * flux aggregator's round (deviation, heartbeat, or a round another oracle started). A module of its
 * own: the read commands name triggers without loading the job types' schemas (and ethers with them).
 */
export const RUN_TRIGGERS = ['request', 'tick', 'call', 'round'] as const
export type RunTrigger = (typeof RUN_TRIGGERS)[number]
