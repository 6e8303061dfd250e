import { ConfigError } from './setting.js'
import type { ServerConfig } from './server.js'
import type { WebauthnConfig } from './webauthn.js'

/** A plain-HTTP origin production still takes: the machine itself (a browser treats it as a secure context). */
const LOOPBACK_HTTP_ORIGIN = /^http:\/\/(localhost|127\.0\.0\.1)(:\d+)?$/

/**
 * Settings that are fine on a laptop and unsafe on the internet: production refuses them. Asked once every
 * concern has read its own settings (the origins and proxies come parsed).
 */
export function refuseUnsafeProductionSettings (
  env: { COOKIE_SECURE: boolean, PUBLIC_URL: string }, { trustProxy, allowedOrigins }: Pick<ServerConfig, 'trustProxy' | 'allowedOrigins'>, { webauthn }: WebauthnConfig
): void {
  if (trustProxy === true) {
    throw new ConfigError('Invalid setting: TRUST_PROXY=true is refused in production (any client could choose its address); give the hop count or the proxies\' addresses')
  }
  if (!env.COOKIE_SECURE) throw new ConfigError('Invalid setting: COOKIE_SECURE=false is refused in production (tokens would travel over plain HTTP)')
  if (!/^https:\/\//i.test(env.PUBLIC_URL) && !/^http:\/\/localhost(:\d+)?(\/|$)/i.test(env.PUBLIC_URL)) {
    throw new ConfigError('Invalid setting: PUBLIC_URL must start with https:// in production (mailed links carry tokens); only http://localhost is excepted')
  }
  // An http:// origin is a page anyone on its network path can rewrite: trusted with credentialed
  // cross-origin requests (ALLOWED_ORIGINS) or passkey assertions (WEBAUTHN_ORIGINS), it lends them out.
  for (const [setting, list] of Object.entries({ ALLOWED_ORIGINS: allowedOrigins, WEBAUTHN_ORIGINS: webauthn.origins })) {
    const plain = list.find(origin => origin.startsWith('http://') && !LOOPBACK_HTTP_ORIGIN.test(origin))
    if (plain !== undefined) {
      throw new ConfigError(`Invalid setting: ${setting} has "${plain}", which is not https:// (refused in production; only http://localhost and http://127.0.0.1 are excepted)`)
    }
  }
}
