/**
 * Task types of Chainlink's node that a directrequest spec may name but feedrunner refuses, each
 * with why (docs/job-specs.md's conformance table lists them; the loader says the reason).
 */
export const REFUSED_TASK_TYPES: Readonly<Record<string, string>> = {
  vrf: "a VRF job's task (it needs the node's VRF keys); not for directrequest jobs",
  vrfv2: "a VRF v2 job's task (it needs the node's VRF keys); not for directrequest jobs",
  vrfv2plus: "a VRF v2.5 job's task (it needs the node's VRF keys); not for directrequest jobs",
  ethgetblock:
    "it reads the node's head tracker, which feedrunner does not keep, and Chainlink's task reference does not list it: use ethcall, or $(jobRun.logBlockNumber) and friends",
  panic: "Chainlink's own test task: it crashes the node on purpose",
}
