#!/usr/bin/env node
// The container image's HEALTHCHECK: asks the running feedrunner command's liveness endpoint, found
// from the command itself (the image runs one command per container):
//   start, adapter, dev -> GET /live on EA_PORT (default 8080); dev: on the adapter URL it recorded in
//                          DEV_STATE_FILE, when it did (it takes another port when EA_PORT is busy)
//   worker, runner      -> GET /live on OPERATIONS_PORT (default 9090; 0 = none to ask)
//   feeds serve         -> any HTTP answer on its --port (default 8090)
// Plain JavaScript with no dependencies: it runs beside the service, on every interval.
/* global fetch, AbortSignal */
import { readFileSync, readdirSync } from 'node:fs'

const TIMEOUT_MS = 3_000

/** The arguments after bin/feedrunner.js of the feedrunner process in this container. */
function feedrunnerArgs() {
  for (const pid of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    let argv
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean)
    } catch {
      continue
    }
    const script = argv.findIndex((arg) => arg.endsWith('bin/feedrunner.js'))
    if (script !== -1) return argv.slice(script + 1)
  }
  return undefined
}

function optionValue(args, name, fallback) {
  const index = args.indexOf(name)
  if (index !== -1 && args[index + 1]) return args[index + 1]
  const inline = args.find((arg) => arg.startsWith(`${name}=`))
  return inline ? inline.slice(name.length + 1) : fallback
}

/** The adapter URL a running dev stack recorded in DEV_STATE_FILE: its port is EA_PORT only when free. */
function devAdapterUrl() {
  if (!process.env.DEV_STATE_FILE) return undefined
  try {
    const { adapterUrl } = JSON.parse(readFileSync(process.env.DEV_STATE_FILE, 'utf8'))
    return typeof adapterUrl === 'string' ? adapterUrl : undefined
  } catch {
    return undefined
  }
}

/** The address EA_HOST binds the adapter and OPERATIONS_PORT to, as a URL's host (loopback for every interface). */
function servedHost() {
  const host = (process.env.EA_HOST || '127.0.0.1').replace(/^\[|\]$/g, '')
  if (host === '0.0.0.0' || /^[0:]+$/.test(host)) return '127.0.0.1'
  return host.includes(':') ? `[${host}]` : host
}

/** Where to ask, or a reason there is nothing to ask. */
function target(args) {
  const [command, sub] = args
  const devUrl = command === 'dev' ? devAdapterUrl() : undefined
  if (devUrl) return { url: `${devUrl}/live`, needOk: true }
  if (command === 'start' || command === 'adapter' || command === 'dev')
    return { url: `http://${servedHost()}:${process.env.EA_PORT || 8080}/live`, needOk: true }
  if (command === 'worker' || command === 'runner') {
    const port = process.env.OPERATIONS_PORT || '9090'
    if (port === '0')
      return { reason: `${command}: OPERATIONS_PORT=0, no liveness endpoint to ask` }
    return { url: `http://${servedHost()}:${port}/live`, needOk: true }
  }
  if (command === 'feeds' && sub === 'serve')
    return { url: `http://127.0.0.1:${optionValue(args, '--port', '8090')}/`, needOk: false }
  return { reason: `${command ?? '(no command)'}: a one-shot command has no liveness endpoint` }
}

const args = feedrunnerArgs()
if (!args) {
  console.error('healthcheck: no feedrunner process is running in this container')
  process.exit(1)
}
const { url, needOk, reason } = target(args)
if (!url) {
  console.log(`healthcheck: ${reason}`)
  process.exit(0)
}
try {
  const response = await fetch(url, { signal: AbortSignal.timeout(TIMEOUT_MS) })
  const alive = needOk ? response.ok : response.status < 500
  console.log(`healthcheck: ${url} answered ${response.status}`)
  process.exit(alive ? 0 : 1)
} catch (error) {
  console.error(
    `healthcheck: ${url} did not answer (${error instanceof Error ? error.message : String(error)})`,
  )
  process.exit(1)
}
