import t from 'tap'
import { ConfigError, loadConfig } from '../../../core/config.js'

const google = {
  OIDC_PROVIDERS: 'Google',
  OIDC_GOOGLE_ISSUER: 'https://accounts.google.com',
  OIDC_GOOGLE_CLIENT_ID: 'id',
  OIDC_GOOGLE_CLIENT_SECRET: 'secret'
}

t.test('OIDC_PROVIDERS: none by default; each name reads its own settings, with defaults for scopes and label', async (t) => {
  t.same(loadConfig({}).oidc, { providers: [], discoveryTimeoutSeconds: 5 })
  t.same(loadConfig({ ...google, OIDC_DISCOVERY_TIMEOUT: '2s' }).oidc, {
    providers: [{ name: 'google', label: 'google', issuer: 'https://accounts.google.com', clientId: 'id', clientSecret: 'secret', scopes: 'openid email profile' }],
    discoveryTimeoutSeconds: 2
  })
  t.match(loadConfig({ ...google, OIDC_GOOGLE_LABEL: 'Google', OIDC_GOOGLE_SCOPES: 'openid email' }).oidc.providers[0], { label: 'Google', scopes: 'openid email' })
})

t.test('a bad provider setting stops the start with one line naming it', async (t) => {
  const refused = (env: Record<string, string>, pattern: RegExp) => t.throws(() => loadConfig(env), { name: 'Error', message: pattern }, pattern.source)
  refused({ ...google, OIDC_GOOGLE_CLIENT_SECRET: '' }, /OIDC_GOOGLE_CLIENT_SECRET is required/)
  refused({ OIDC_PROVIDERS: 'corp' }, /OIDC_CORP_ISSUER is required/)
  refused({ ...google, OIDC_GOOGLE_ISSUER: 'accounts.google.com' }, /OIDC_GOOGLE_ISSUER must be an https:\/\/ URL/)
  refused({ ...google, OIDC_GOOGLE_SCOPES: 'email profile' }, /OIDC_GOOGLE_SCOPES must include openid/)
  refused({ ...google, OIDC_PROVIDERS: 'google,google' }, /names "google" twice/)
  refused({ ...google, OIDC_PROVIDERS: 'providers' }, /cannot name a provider "providers"/)
  refused({ ...google, OIDC_PROVIDERS: 'my-idp' }, /OIDC_PROVIDERS has "my-idp"/)
  refused({ ...google, OIDC_DISCOVERY_TIMEOUT: '0' }, /OIDC_DISCOVERY_TIMEOUT must be at least 1 second/)
  t.ok(loadConfig({ ...google, OIDC_GOOGLE_ISSUER: 'http://127.0.0.1:9000' }), 'http:// outside production (development, tests)')
  const production = { NODE_ENV: 'production', PUBLIC_URL: 'https://auth.example.com' }
  refused({ ...production, ...google, OIDC_GOOGLE_ISSUER: 'http://idp.example.com' }, /OIDC_GOOGLE_ISSUER must start with https:\/\/ in production/)
  t.type(new ConfigError('x'), Error)
})
