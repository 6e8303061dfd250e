import { Ajv, type Options, type ValidateFunction } from 'ajv'
import addFormatsModule from 'ajv-formats'
import { Email } from './schemas/common.js'

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

// validateSchema false: our schemas are constants of the code, checked by the tests; checking each against
// JSON Schema's meta-schema compiled that meta-schema first, a tenth of the start (issue 23).
const shared: Options = { removeAdditional: false, useDefaults: true, allErrors: false, strict: false, validateSchema: false }

/**
 * Fastify's default ajv coerces types and strips unknown properties. For JSON
 * bodies we want neither: `123` is not a name, and an unknown field (a password
 * in a PATCH) is an error, not something to drop silently. Path parameters and
 * query strings arrive as text, so they keep coercion.
 */
/** Fastify's validatorCompiler (its FastifySchemaCompiler), typed by what it is given, so that core/ needs nothing of Fastify. */
export type ValidatorCompiler = (route: { schema: object, httpPart?: string }) => ValidateFunction

export function buildValidatorCompiler (): ValidatorCompiler {
  return ({ schema, httpPart }) => lazily(() => (httpPart === 'body' ? bodyValidator() : textValidator()).compile(schema))
}

/**
 * A validator compiled at its first use, not when its route is added: the start compiled every
 * route's schemas, a fifth of it, for routes a process may never serve (issue 23). It keeps Ajv's
 * contract: the function returns whether the data is valid and carries the last call's `errors`.
 */
function lazily (compile: () => ValidateFunction): ValidateFunction {
  let compiled: ValidateFunction | undefined
  const validate = function (this: unknown, data: unknown, context?: unknown): boolean {
    compiled ??= compile()
    const valid = compiled.call(this, data, context as never) as boolean
    validate.errors = compiled.errors
    return valid
  } as ValidateFunction
  validate.errors = null
  return validate
}

// One of each per process: Ajv keeps what it compiled by schema object, and the route schemas are module
// constants, so the second variant mounted (or the app built again, as every test does) compiles nothing.
let bodies: Ajv | undefined
let texts: Ajv | undefined
const bodyValidator = () => (bodies ??= bodyAjv())
const textValidator = () => (texts ??= addFormats(new Ajv({ ...shared, coerceTypes: 'array' }), ['email']))

const bodyAjv = () => addFormats(new Ajv({ ...shared, coerceTypes: false }), ['email'])

let emailValidator: ValidateFunction | undefined

/**
 * Whether a value is an address as registration takes it: the same Email schema (core/schemas/common.ts),
 * compiled as bodies are. For what the service is told rather than sent (a provider's email claim):
 * "Win <mallory@evil.test>, victim@example.com" is no address.
 */
export function isEmail (value: unknown): boolean {
  emailValidator ??= bodyValidator().compile(Email)
  return emailValidator(value)
}

/** A validator of a schema compiled as bodies are (no coercion, nothing removed): for what a rule reads that no route validated (an imported user). */
export function compileBodySchema (schema: object): ValidateFunction {
  return bodyValidator().compile(schema)
}
