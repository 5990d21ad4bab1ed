import type { FastifyInstance } from 'fastify'
import { METRICS_CONTENT_TYPE, metricsText } from '../metrics/registry.ts'
import { processHealth, type Health } from './health.ts'

/** The paths every feedrunner server with health endpoints answers. */
export const HEALTH_PATHS = { live: '/live', ready: '/ready' } as const
export const METRICS_PATH = '/metrics'

/**
 * GET /live and GET /ready: 200 with every check when healthy, 503 naming what is down
 * (`{"status": "unavailable", "down": ["redis"], "checks": {...}}`).
 */
export function registerHealthRoutes(app: FastifyInstance, health: Health = processHealth): void {
  app.get(HEALTH_PATHS.live, async (_request, reply) => {
    const report = await health.liveness()
    return reply
      .code(report.status === 'ok' ? 200 : 503)
      .type('application/json; charset=utf-8')
      .send(report)
  })
  app.get(HEALTH_PATHS.ready, async (_request, reply) => {
    const report = await health.readiness()
    return reply
      .code(report.status === 'ok' ? 200 : 503)
      .type('application/json; charset=utf-8')
      .send(report)
  })
}

/** GET /metrics: the process's Prometheus text (feedrunner's metrics and, in an adapter process, the framework's). */
export function registerMetricsRoute(app: FastifyInstance): void {
  app.get(METRICS_PATH, async (_request, reply) =>
    reply.type(METRICS_CONTENT_TYPE).send(await metricsText()),
  )
}
