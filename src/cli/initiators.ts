import type { Command } from 'commander'
import { endpointOf } from '../config/settings.ts'
import { connectClient } from '../queue/connection.ts'
import { withDevStack } from './dev-state.ts'
import { settingsOrExit } from './lifecycle.ts'

/** `feedrunner initiators create NAME`: an external initiator of webhook jobs, as a Chainlink node makes one. */
export function register(program: Command): void {
  const initiators = program
    .command('initiators')
    .description("External initiators: who may start webhook jobs' runs besides the operator")
  initiators
    .command('create')
    .description(
      'Create an external initiator and print its access key and secret, once: only a hash of the secret is kept (in Redis, REDIS_URL and QUEUE_PREFIX, or the dev stack of this checkout)',
    )
    .argument('<name>', 'its name, as webhook specs list it in externalInitiators')
    .option('--json', 'print JSON alone on stdout')
    .action(async (name: string, options: { json?: boolean }) => {
      process.exitCode = await createAction(name, options)
    })
}

async function createAction(name: string, options: { json?: boolean }): Promise<number> {
  const { createInitiator, INITIATOR_NAME } = await import('../runner/initiators.ts')
  if (!INITIATOR_NAME.test(name)) {
    console.error(`initiator name ${JSON.stringify(name)}: use 1-64 letters, digits, "-" or "_"`)
    return 1
  }
  const settings = settingsOrExit(withDevStack().env)
  const redis = await connectClient(settings.REDIS_URL).catch((error: unknown) => {
    console.error(
      `cannot create the initiator: Redis at REDIS_URL ${endpointOf(settings.REDIS_URL)} does not answer (${(error as Error).message})`,
    )
    return undefined
  })
  if (!redis) return 1
  try {
    const pair = await createInitiator(redis, settings.QUEUE_PREFIX, name)
    if (!pair) {
      console.error(`an external initiator named ${name} exists already: choose another name`)
      return 1
    }
    if (options.json) console.log(JSON.stringify({ name, ...pair }))
    else
      console.log(
        [
          `external initiator ${name} created; its secret is shown this once:`,
          `  X-Chainlink-EA-AccessKey: ${pair.accessKey}`,
          `  X-Chainlink-EA-Secret: ${pair.secret}`,
          `List ${name} in a webhook spec's externalInitiators for it to start that job's runs.`,
        ].join('\n'),
      )
    return 0
  } finally {
    redis.disconnect()
  }
}
