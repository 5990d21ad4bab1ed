import type {
  InputParameter,
  InputParametersDefinition,
} from '@chainlink/external-adapter-framework/validation/input-params.js'
import { InputParameters } from '@chainlink/external-adapter-framework/validation/index.js'
import type { CatalogEntry, ParamSpec } from '../feeds/catalog/index.ts'
import { VALUE_TYPES } from '../reduce/index.ts'
import { SIGN_KEY_PLACEHOLDER } from '../signkey/index.ts'

export { SIGN_KEY_PLACEHOLDER }

/**
 * Parameters every endpoint takes besides the feed's own: `key` and the reduction of the envelope
 * to one value (`path`, `times`, `type`), evaluated by src/reduce.
 */
export const RESERVED_PARAMS = ['key', 'path', 'times', 'type'] as const

const reservedDefinition = {
  key: {
    type: 'string',
    description: `Only the ${SIGN_KEY_PLACEHOLDER} placeholder (the adapter uses the node's own key); a client key only when the operator set ALLOW_CLIENT_KEYS=true`,
  },
  path: {
    type: 'string',
    description:
      "Path to the result in the feed envelope: JSONPath ($.data.homeTeamScore), dot (data.homeTeamScore) or Chainlink's comma form (data,homeTeamScore); field aliases resolve, negative indices count from the end. Default: the endpoint's natural result field",
  },
  times: {
    type: 'string',
    description:
      'Exact decimal multiplier applied to the result (with uint256/int256: multiplied, then floored)',
  },
  type: {
    type: 'string',
    description:
      'Cast the result: uint256, int256, bool, bytes32, string, address or bytes (Airnode rules)',
    options: [...VALUE_TYPES],
  },
} as const satisfies InputParametersDefinition

/**
 * The framework's input parameters of an endpoint, derived from its catalog entry: the feed's own
 * names, descriptions and examples. Values are checked by the catalog's validation afterwards
 * (customInputValidation), which also applies defaults, so none is declared here.
 */
export function inputParametersFor(
  entry: CatalogEntry,
): InputParameters<InputParametersDefinition> {
  const definition: Record<string, InputParameter> = {}
  for (const spec of Object.values(entry.params)) definition[spec.name] = feedParameter(spec)
  Object.assign(definition, reservedDefinition)
  return new InputParameters<InputParametersDefinition>(definition, [{ ...entry.example }])
}

function feedParameter(spec: ParamSpec): InputParameter {
  const details = [spec.description]
  if (spec.options) details.push(`one of: ${spec.options.join(', ')}`)
  if (spec.default !== undefined) details.push(`default ${spec.default}`)
  details.push(`e.g. ${spec.example}`)
  const description = details.join('; ')
  return spec.required
    ? { type: 'string', description, required: true }
    : { type: 'string', description }
}
