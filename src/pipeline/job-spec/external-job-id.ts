import { basename } from 'node:path'
import { v5 as uuidV5 } from 'uuid'

/**
 * The namespace of feedrunner's derived job ids (a fixed random UUID: changing it would change
 * every derived id, and with it the jobId every consumer was deployed with).
 */
const DERIVED_JOB_ID_NAMESPACE = '8b0c6f1e-5d2a-4e57-9a43-7f1d2c9e6b10'

/**
 * The externalJobID of a spec that gives none: a v5 UUID of the spec's name and file name, so it is
 * the same on every start and every machine, and two specs in one folder never share it. Chainlink
 * draws a random one instead, which a consumer could only learn from the node's UI.
 */
export function deriveExternalJobID(name: string, file: string): string {
  return uuidV5(`${name.trim()}\n${basename(file)}`, DERIVED_JOB_ID_NAMESPACE)
}
