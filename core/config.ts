import { accountConfig, type AccountConfig } from './config/accounts.js'
import { readEnvironment } from './config/environment.js'
import { mailConfig, type MailConfig } from './config/mail.js'
import { oauthConfig, type OauthConfig } from './config/oauth.js'
import { refuseUnsafeProductionSettings } from './config/production.js'
import { rateLimitConfig, type RateLimitConfig } from './config/rate-limits.js'
import { serverConfig, type ServerConfig } from './config/server.js'
import { storeConfig, type StoreConfig } from './config/store.js'
import { tokenConfig, type TokenConfig } from './config/tokens.js'
import { webauthnConfig, type WebauthnConfig } from './config/webauthn.js'
import { webhookConfig, type WebhookConfig } from './config/webhooks.js'

export type { OidcProviderConfig } from './config/oauth.js'
export { MAX_REQUEST_TIMEOUT_MS, type Variant } from './config/server.js'
export { ConfigError } from './config/setting.js'

/**
 * The validated settings, in the units the code uses (seconds, lists): one object built at start from the
 * environment and passed down. Each concern reads its own settings in core/config/<concern>.ts (its part of the
 * schema, its fields here, its checks); core/config/environment.ts reads and checks them all at once.
 */
export interface Config extends ServerConfig, StoreConfig, TokenConfig, RateLimitConfig, AccountConfig, MailConfig, WebhookConfig, WebauthnConfig, OauthConfig {}

/**
 * Builds the config from an environment (process.env by default).
 * Throws ConfigError with one line naming the first bad setting.
 */
export function loadConfig (environment: Record<string, string | undefined> = process.env): Config {
  const env = readEnvironment(environment)
  const tokens = tokenConfig(env)
  const store = storeConfig(env)
  const rateLimits = rateLimitConfig(env)
  const server = serverConfig(env)
  const mail = mailConfig(env)
  const accounts = accountConfig(env)
  const webauthn = webauthnConfig(env)
  const oauth = oauthConfig(env, environment)
  const webhooks = webhookConfig(env)
  if (env.NODE_ENV === 'production') refuseUnsafeProductionSettings(env, server, webauthn)
  return { ...server, ...store, ...tokens, ...rateLimits, ...accounts, ...mail, ...webhooks, ...webauthn, ...oauth }
}
