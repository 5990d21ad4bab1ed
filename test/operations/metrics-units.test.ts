import { describe, expect, it } from 'vitest'
import type { OracleRequestEvent } from '../../src/chain/operator.ts'
import {
  errorClass,
  fetchStatusLabel,
  instrumentFetch,
  metricsRegistry,
  metricsText,
  REASON_CLASSES,
  refusalClass,
  watchSender,
} from '../../src/metrics/index.ts'
import { FetchFailureError } from '../../src/queue/fetch-worker.ts'
import { refusalOf, RequestRefusedError } from '../../src/runner/admission.ts'
import type { SpecOf } from '../../src/pipeline/index.ts'
import { parsePrometheus, valueOf } from './support.ts'

/** One scrape of the process's registry, summed over the samples that match. */
async function sampleValue(name: string, labels: Record<string, string>): Promise<number> {
  return valueOf(parsePrometheus(await metricsText()), name, labels)
}

describe('reason classes', () => {
  const request = {
    requester: '0x1111111111111111111111111111111111111111',
    payment: 10n,
  } as OracleRequestEvent

  it("classify the runner's own refusal texts", () => {
    const notAllowed = refusalOf(
      { requesters: ['0x2222222222222222222222222222222222222222'] } as SpecOf<'directrequest'>,
      request,
    )
    const tooLittle = refusalOf(
      { minContractPaymentLinkJuels: 1000n } as SpecOf<'directrequest'>,
      request,
    )
    expect(refusalClass(notAllowed)).toBe('requester_not_allowed')
    expect(refusalClass(tooLittle)).toBe('payment_too_low')
    expect(refusalClass(new RequestRefusedError('unknown_job', 'no job with spec id 0x1234'))).toBe(
      'unknown_job',
    )
  })

  it('classify a refusal by its code, never by its words', () => {
    const misleading = new RequestRefusedError(
      'payment_too_low',
      "requester 0x1111111111111111111111111111111111111111 is not in the job's requesters",
    )
    expect(refusalClass(misleading)).toBe('payment_too_low')
  })

  it('classify a failed task by its kind, never by its words', () => {
    expect(
      errorClass([
        {
          type: 'bridge',
          ok: false,
          error: 'the feed service timed out (deadline exceeded)',
          failure: { kind: 'upstream' },
        },
      ]),
    ).toBe('fetch_failed')
    expect(
      errorClass([
        { type: 'ethtx', ok: false, error: 'reverted? no', failure: { kind: 'node_refused' } },
      ]),
    ).toBe('tx_failed')
    expect(
      errorClass([
        { type: 'jsonparse', ok: false, error: 'no value', failure: { kind: 'timeout' } },
      ]),
    ).toBe('timeout')
  })

  it('classify an errored run by its first failed task', () => {
    expect(
      errorClass([
        { type: 'cborparse', ok: true },
        { type: 'bridge', ok: false, error: 'HTTP 502 from the bridge' },
        { type: 'jsonparse', ok: false, error: 'no input' },
      ]),
    ).toBe('fetch_failed')
    expect(
      errorClass([
        {
          type: 'bridge',
          ok: false,
          error: 'timed out after 30000 ms',
          failure: { kind: 'timeout' },
        },
      ]),
    ).toBe('timeout')
    expect(
      errorClass([
        {
          type: 'ethtx',
          ok: false,
          error: 'transaction 0xab reverted: Must have a valid requestId',
          failure: { kind: 'reverted' },
        },
      ]),
    ).toBe('tx_reverted')
    expect(errorClass([{ type: 'jsonparse', ok: false, error: 'path not found' }])).toBe(
      'bad_value',
    )
    expect(errorClass([{ type: 'ethabidecodelog', ok: false, error: 'bad log' }])).toBe(
      'bad_request_data',
    )
    for (const reason of [
      'fetch_failed',
      'timeout',
      'tx_reverted',
      'bad_value',
      'bad_request_data',
    ])
      expect(REASON_CLASSES).toContain(reason)
  })

  it('name fetch statuses from a small fixed set', () => {
    expect(fetchStatusLabel(404, 'upstream')).toBe('404')
    expect(fetchStatusLabel(418, 'upstream')).toBe('4xx')
    expect(fetchStatusLabel(599, 'upstream')).toBe('5xx')
    expect(fetchStatusLabel(undefined, 'upstream')).toBe('no_answer')
    expect(fetchStatusLabel(200, 'invalid-response')).toBe('invalid_response')
    const labels = new Set<string>()
    for (let status = 100; status < 600; status++) labels.add(fetchStatusLabel(status, 'upstream'))
    expect(labels.size).toBeLessThanOrEqual(20)
  })
})

describe('instrumented parts', () => {
  it('times fetches and counts failures by family and status', async () => {
    const ok = instrumentFetch(async (_data: unknown, _context: { family: string }) => ({
      result: 'success',
    }))
    const refused = instrumentFetch(async (_data: unknown, _context: { family: string }) => {
      throw new FetchFailureError({
        kind: 'upstream',
        providerStatus: 401,
        message: 'bad key',
        retryable: false,
      })
    })
    const errorsBefore = await sampleValue('feedrunner_fetch_errors_total', {
      family: 'nft',
      status: '401',
    })
    await ok({}, { family: 'nft' })
    await expect(refused({}, { family: 'nft' })).rejects.toThrow('bad key')
    expect(
      await sampleValue('feedrunner_fetch_errors_total', { family: 'nft', status: '401' }),
    ).toBe(errorsBefore + 1)
    expect(
      await sampleValue('feedrunner_fetch_duration_seconds_count', {
        family: 'nft',
        status: '200',
      }),
    ).toBeGreaterThanOrEqual(1)
  })

  it("turns a sender's running totals into counters that move by the difference, per key index", async () => {
    const stats = [
      {
        nextNonce: 7,
        pending: 1,
        owned: true,
        sent: 3,
        bumped: 0,
        reverted: 0,
        filled: 0,
        resent: 0,
        leasesLost: 0,
        reorgedOut: 2,
        held: 0,
        noncesTaken: 1,
      },
      {
        nextNonce: 2,
        pending: 0,
        owned: false,
        sent: 1,
        bumped: 1,
        reverted: 1,
        filled: 2,
        resent: 4,
        leasesLost: 1,
        reorgedOut: 0,
        held: 0,
        noncesTaken: 0,
      },
    ]
    const unwatch = watchSender(
      () => stats,
      async () => [15n * 10n ** 17n, 2n * 10n ** 9n],
    )
    try {
      // Each read is a scrape: the counter takes what the sender did since the previous one.
      expect(await sampleValue('feedrunner_tx_sent_total', { key: '0' })).toBe(3)
      expect(await sampleValue('feedrunner_tx_reorged_out_total', { key: '0' })).toBe(2)
      expect(await sampleValue('feedrunner_tx_nonce_taken_total', { key: '0' })).toBe(1)
      expect(await sampleValue('feedrunner_tx_sent_total', { key: '0' })).toBe(3)
      stats[0]!.sent = 5
      await metricsRegistry.metrics()
      expect(await sampleValue('feedrunner_tx_sent_total', { key: '0' })).toBe(5)
      expect(await sampleValue('feedrunner_tx_next_nonce', { key: '0' })).toBe(7)
      expect(await sampleValue('feedrunner_tx_key_owned', { key: '0' })).toBe(1)
      expect(await sampleValue('feedrunner_tx_key_owned', { key: '1' })).toBe(0)
      expect(await sampleValue('feedrunner_tx_key_leases_lost_total', { key: '1' })).toBe(1)
      expect(await sampleValue('feedrunner_tx_bumped_total', { key: '1' })).toBeGreaterThanOrEqual(
        1,
      )
      expect(await sampleValue('feedrunner_tx_filled_total', { key: '1' })).toBeGreaterThanOrEqual(
        2,
      )
      expect(await sampleValue('feedrunner_tx_resent_total', { key: '1' })).toBeGreaterThanOrEqual(
        4,
      )
      expect(await sampleValue('feedrunner_tx_key_balance_eth', { key: '0' })).toBe(1.5)
      expect(await sampleValue('feedrunner_tx_key_balance_eth', { key: '1' })).toBe(2e-9)
    } finally {
      unwatch()
    }
  })
})
