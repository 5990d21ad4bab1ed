import type { AddressInfo } from 'node:net'
import Fastify, { type FastifyInstance } from 'fastify'
import { listenAddress } from '../net/listen-address.ts'
import { processHealth, type Health } from './health.ts'
import { registerHealthRoutes, registerMetricsRoute } from './routes.ts'

export interface OperationsServerOptions {
  /** 0 picks a free port. */
  port: number
  /** Default 127.0.0.1: only this machine reaches it. */
  host?: string
  health?: Health
  /** Routes of the process's own beside these (the runner's runs endpoint). */
  routes?: (app: FastifyInstance) => void
}

export interface OperationsServer {
  /** Where this host reaches it: `http://127.0.0.1:<port>` when it listens on every interface. */
  readonly url: string
  /** The address it listens on: `http://0.0.0.0:<port>`, `http://127.0.0.1:<port>`. */
  readonly listening: string
  readonly loopback: boolean
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
  options.routes?.(app)
  const host = options.host ?? '127.0.0.1'
  await app.listen({ port: options.port, host })
  const port = (app.server.address() as AddressInfo).port
  const { url, listening, loopback } = listenAddress(host, port)
  return { url, listening, loopback, port, close: () => app.close() }
}
