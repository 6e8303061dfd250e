import { Ajv, type Options } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { FastifySchemaCompiler } from 'fastify'

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

const shared: Options = { removeAdditional: false, useDefaults: true, allErrors: false, strict: false }

/**
 * Fastify's default ajv coerces types and strips unknown properties. For JSON
 * bodies we want neither: `123` is not a name, and an unknown field (a password
 * in a PATCH) is an error, not something to drop silently. Path parameters and
 * query strings arrive as text, so they keep coercion.
 */
export function buildValidatorCompiler (): FastifySchemaCompiler<object> {
  const bodyValidator = addFormats(new Ajv({ ...shared, coerceTypes: false }), ['email'])
  const textValidator = addFormats(new Ajv({ ...shared, coerceTypes: 'array' }), ['email'])
  return ({ schema, httpPart }) => (httpPart === 'body' ? bodyValidator : textValidator).compile(schema)
}
