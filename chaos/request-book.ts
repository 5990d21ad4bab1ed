import { consumerRequest, expectedValue } from './catalog.ts'
import type { SentRequests } from './collect.ts'
import type { RequestPlan } from './schedule.ts'
import type { HarnessWallet } from './wallet.ts'

/**
 * The requests a schedule made, by purpose (`request:<index>` for the paced ones, `storm:<index>` for
 * a cancel storm's), and the transaction of each: what a request log on chain was meant to be. Each
 * goes through its plan's requester (one of the schedule's consumers).
 */
export class RequestBook implements SentRequests {
  private readonly plans = new Map<string, RequestPlan>()
  private readonly purposes = new Map<string, string>()

  constructor(
    private readonly wallet: HarnessWallet,
    private readonly externalJobId: string,
  ) {}

  async send(plan: RequestPlan, purpose: string): Promise<void> {
    this.plans.set(purpose, plan)
    const request = consumerRequest(this.externalJobId, plan)
    const tx = await this.wallet.request(request, purpose, plan.requester)
    this.purposes.set(tx.hash.toLowerCase(), purpose)
  }

  get count(): number {
    return this.plans.size
  }

  purposeOf(txHash: string): string | undefined {
    return this.purposes.get(txHash.toLowerCase())
  }

  expectedOf(purpose: string): bigint | undefined {
    const plan = this.plans.get(purpose)
    return plan && expectedValue(plan)
  }
}
