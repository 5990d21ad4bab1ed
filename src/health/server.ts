import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import type { Logger } from '../config/logger.ts'
import { processHealth, type Health } from './health.ts'
import { registerHealthRoutes, registerMetricsRoute } from './routes.ts'

export interface OperationsServerOptions {
  /** 0 picks a free port. */
  port: number
  host?: string
  health?: Health
  logger?: Logger
}

export interface OperationsServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  readonly port: number
  close(): Promise<void>
}

/**
 * /metrics, /live and /ready of a process that runs no adapter (`feedrunner runner`,
 * `feedrunner worker`): an adapter process serves the same from the framework's servers instead.
 */
export async function startOperationsServer(
  options: OperationsServerOptions,
): Promise<OperationsServer> {
  const app = Fastify({ logger: false })
  registerHealthRoutes(app, options.health ?? processHealth)
  registerMetricsRoute(app)
  await app.listen({ port: options.port, host: options.host ?? '0.0.0.0' })
  const port = (app.server.address() as AddressInfo).port
  const url = `http://127.0.0.1:${port}`
  options.logger?.info(
    { metrics: `${url}/metrics`, live: `${url}/live`, ready: `${url}/ready` },
    'operations endpoints listening',
  )
  return { url, port, close: () => app.close() }
}
