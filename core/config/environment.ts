import { Type, type Static } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import { Value } from '@sinclair/typebox/value'
import { AccountSettings } from './accounts.js'
import { MailSettings } from './mail.js'
import { OauthSettings } from './oauth.js'
import { RateLimitSettings } from './rate-limits.js'
import { ServerSettings } from './server.js'
import { ConfigError } from './setting.js'
import { StoreSettings } from './store.js'
import { TokenSettings } from './tokens.js'
import { WebauthnSettings } from './webauthn.js'
import { WebhookSettings } from './webhooks.js'

/** Every setting the service reads, with its default: each concern's. docs/configuration.md's table mirrors them. */
const EnvironmentSchema = Type.Object({
  ...ServerSettings.properties,
  ...StoreSettings.properties,
  ...TokenSettings.properties,
  ...RateLimitSettings.properties,
  ...AccountSettings.properties,
  ...MailSettings.properties,
  ...WebhookSettings.properties,
  ...WebauthnSettings.properties,
  ...OauthSettings.properties
})

export type Environment = Static<typeof EnvironmentSchema>

let environmentCheck: TypeCheck<typeof EnvironmentSchema> | undefined

/**
 * The settings the schema names, read from the environment: text converted where the schema wants a
 * number or a boolean, defaults filled in, everything checked; any other variable is left alone.
 * TypeBox's own compiler checks them, not Ajv (env-schema's): compiling this schema and JSON
 * Schema's meta-schema with Ajv took about 80 ms of every start, a sixth of its budget (issue 23);
 * TypeBox compiles it in a millisecond or two. Throws ConfigError naming the first bad setting.
 */
export function readEnvironment (environment: Record<string, string | undefined>): Environment {
  environmentCheck ??= TypeCompiler.Compile(EnvironmentSchema)
  const given: Record<string, string> = {}
  for (const name of Object.keys(EnvironmentSchema.properties)) {
    const value = environment[name]
    if (value !== undefined) given[name] = value
  }
  const env = Value.Default(EnvironmentSchema, Value.Convert(EnvironmentSchema, given))
  const error = environmentCheck.Errors(env).First()
  if (error !== undefined) {
    const name = error.path.split('/')[1] ?? error.path
    if (given[name] === undefined) throw new ConfigError(`Invalid setting: ${name} is required`)
    const choices = (EnvironmentSchema.properties[name as keyof Environment] as { anyOf?: Array<{ const?: unknown }> }).anyOf?.map(choice => choice.const)
    if (choices?.every(choice => typeof choice === 'string') === true) throw new ConfigError(`Invalid setting: ${name} must be one of ${choices.join(', ')}`)
    throw new ConfigError(`Invalid setting: ${name} is not valid (${error.message.charAt(0).toLowerCase()}${error.message.slice(1)})`)
  }
  return env as Environment
}
