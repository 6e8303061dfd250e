import { Ajv, type Options, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { Email } from './schemas/common.js'

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

const shared: Options = { removeAdditional: false, useDefaults: true, allErrors: false, strict: false }

/**
 * Fastify's default ajv coerces types and strips unknown properties. For JSON
 * bodies we want neither: `123` is not a name, and an unknown field (a password
 * in a PATCH) is an error, not something to drop silently. Path parameters and
 * query strings arrive as text, so they keep coercion.
 */
/** Fastify's validatorCompiler (its FastifySchemaCompiler), typed by what it is given, so that core/ needs nothing of Fastify. */
export type ValidatorCompiler = (route: { schema: object, httpPart?: string }) => ValidateFunction

export function buildValidatorCompiler (): ValidatorCompiler {
  const bodyValidator = bodyAjv()
  const textValidator = addFormats(new Ajv({ ...shared, coerceTypes: 'array' }), ['email'])
  return ({ schema, httpPart }) => (httpPart === 'body' ? bodyValidator : textValidator).compile(schema)
}

const bodyAjv = () => addFormats(new Ajv({ ...shared, coerceTypes: false }), ['email'])

let emailValidator: ValidateFunction | undefined

/**
 * Whether a value is an address as registration takes it: the same Email schema (core/schemas/common.ts),
 * compiled as bodies are. For what the service is told rather than sent (a provider's email claim):
 * "Win <mallory@evil.test>, victim@example.com" is no address.
 */
export function isEmail (value: unknown): boolean {
  emailValidator ??= bodyAjv().compile(Email)
  return emailValidator(value)
}
