import t from 'tap'
import { describeDatabase, isPostgresUrl } from '../../db/open.js'
import { ConfigError, loadConfig } from '../../core/config.js'
import { parseDurationSeconds } from '../../core/duration.js'

t.test('the defaults are the contract\'s', async (t) => {
  t.match(loadConfig({}), {
    host: '127.0.0.1',
    port: 3000,
    variant: 'cookie',
    databaseUrl: './data/accounts.db',
    accessTokenTtlSeconds: 900,
    refreshTokenTtlSeconds: 30 * 86400,
    refreshReuseGraceSeconds: 5,
    cookieSecure: true,
    rateLimit: { enabled: true },
    logLevel: 'info'
  })
})

t.test('durations accept seconds or a unit', async (t) => {
  t.equal(parseDurationSeconds('900'), 900)
  t.equal(parseDurationSeconds('15m'), 900)
  t.equal(parseDurationSeconds('30d'), 2_592_000)
  t.equal(parseDurationSeconds('2h'), 7200)
  t.throws(() => parseDurationSeconds('soon'))
  t.match(loadConfig({ ACCESS_TOKEN_TTL: '5m', REFRESH_REUSE_GRACE: '0', API_VARIANT: 'header', RATE_LIMIT_ENABLED: 'false' }), {
    accessTokenTtlSeconds: 300, refreshReuseGraceSeconds: 0, variant: 'header', rateLimit: { enabled: false }
  })
})

t.test('DATABASE_URL: a postgres:// or postgresql:// URL names PostgreSQL, anything else a SQLite file', async (t) => {
  t.equal(loadConfig({ DATABASE_URL: 'postgres://app@db.internal:5432/accounts' }).databaseUrl, 'postgres://app@db.internal:5432/accounts')
  t.equal(isPostgresUrl('postgresql://app@db.internal/accounts'), true)
  t.equal(isPostgresUrl('./data/accounts.db'), false)
  t.equal(isPostgresUrl('file:./postgres.db'), false)
  t.equal(describeDatabase('postgres://app:s3cret@db.internal:5432/accounts?sslmode=require'), 'postgres://db.internal:5432/accounts', 'logged without credentials')
  t.equal(describeDatabase('./data/accounts.db'), './data/accounts.db')
})

/** A Standard Webhooks secret: whsec_ and 32 bytes in base64. */
const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`

t.test('a bad setting is refused with one line naming it', async (t) => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: 'eighty' }, /^Invalid setting: PORT /],
    [{ PORT: '70000' }, /^Invalid setting: PORT /],
    [{ API_VARIANT: 'both' }, /^Invalid setting: API_VARIANT /],
    [{ ACCESS_TOKEN_TTL: '15 minutes' }, /^Invalid setting: ACCESS_TOKEN_TTL /],
    [{ ACCESS_TOKEN_TTL: '0' }, /^Invalid setting: ACCESS_TOKEN_TTL /],
    [{ REFRESH_TOKEN_TTL: '-1' }, /^Invalid setting: REFRESH_TOKEN_TTL /],
    [{ RATE_LIMIT_ENABLED: 'maybe' }, /^Invalid setting: RATE_LIMIT_ENABLED /],
    [{ LOG_LEVEL: 'loud' }, /^Invalid setting: LOG_LEVEL /],
    [{ ALLOWED_ORIGINS: 'app.example.com' }, /^Invalid setting: ALLOWED_ORIGINS /],
    [{ DATABASE_URL: 'postgres://[::1' }, /^Invalid setting: DATABASE_URL /],
    [{ RATE_LIMIT_LOCKOUT: '0' }, /^Invalid setting: RATE_LIMIT_LOCKOUT /],
    [{ RATE_LIMIT_LOCKOUT: '10m', RATE_LIMIT_LOCKOUT_MAX: '1m' }, /^Invalid setting: RATE_LIMIT_LOCKOUT_MAX /],
    [{ RATE_LIMIT_LOGIN_FAILURES: '0' }, /^Invalid setting: RATE_LIMIT_LOGIN_FAILURES /],
    [{ SIGNING_KEY_RELOAD_INTERVAL: '0' }, /^Invalid setting: SIGNING_KEY_RELOAD_INTERVAL /],
    [{ SIGNING_KEY_ROTATE_AFTER: 'monthly' }, /^Invalid setting: SIGNING_KEY_ROTATE_AFTER /],
    [{ REFRESH_TOKEN_PRUNE_INTERVAL: '1 hour' }, /^Invalid setting: REFRESH_TOKEN_PRUNE_INTERVAL /],
    [{ NODE_ENV: 'production', REQUIRE_EMAIL_VERIFICATION: 'true' }, /^Invalid setting: SMTP_URL is required /],
    [{ SMTP_URL: 'mail.example.com' }, /^Invalid setting: SMTP_URL /],
    [{ PUBLIC_URL: 'accounts.example.com' }, /^Invalid setting: PUBLIC_URL /],
    [{ PASSWORD_RESET_TTL: 'half an hour' }, /^Invalid setting: PASSWORD_RESET_TTL /],
    [{ EMAIL_VERIFICATION_TTL: '0' }, /^Invalid setting: EMAIL_VERIFICATION_TTL /],
    [{ RATE_LIMIT_RECOVERY_ACCOUNT_MAX: '0' }, /^Invalid setting: RATE_LIMIT_RECOVERY_ACCOUNT_MAX /],
    [{ MFA_TOKEN_TTL: '0' }, /^Invalid setting: MFA_TOKEN_TTL /],
    [{ MFA_TOKEN_TTL: 'five minutes' }, /^Invalid setting: MFA_TOKEN_TTL /],
    [{ MAIL_MAX_ATTEMPTS: '0' }, /^Invalid setting: MAIL_MAX_ATTEMPTS /],
    [{ MAIL_RETRY_DELAY: '10 seconds' }, /^Invalid setting: MAIL_RETRY_DELAY /],
    [{ MAIL_RETRY_DELAY: '0ms' }, /^Invalid setting: MAIL_RETRY_DELAY /],
    [{ WEBHOOK_URL: 'hooks.example.com', WEBHOOK_SECRET: SECRET }, /^Invalid setting: WEBHOOK_URL /],
    [{ WEBHOOK_URL: 'https://hooks.example.com' }, /^Invalid setting: WEBHOOK_SECRET is required /],
    [{ WEBHOOK_URL: 'https://hooks.example.com', WEBHOOK_SECRET: 'not a secret' }, /^Invalid setting: WEBHOOK_SECRET must be whsec_/],
    [{ WEBHOOK_URL: 'https://hooks.example.com', WEBHOOK_SECRET: `whsec_${Buffer.alloc(8).toString('base64')}` }, /^Invalid setting: WEBHOOK_SECRET must be whsec_/],
    [{ WEBHOOK_URL: 'https://hooks.example.com', WEBHOOK_SECRET: 'whsec_!!!!' }, /^Invalid setting: WEBHOOK_SECRET must be whsec_/],
    [{ NODE_ENV: 'production', WEBHOOK_URL: 'http://hooks.example.com', WEBHOOK_SECRET: SECRET }, /^Invalid setting: WEBHOOK_URL must start with https:\/\//],
    [{ WEBHOOK_URL: 'https://hooks.example.com', WEBHOOK_SECRET: SECRET, WEBHOOK_MAX_ATTEMPTS: '0' }, /^Invalid setting: WEBHOOK_MAX_ATTEMPTS /]
  ]
  for (const [environment, message] of cases) {
    const error = t.throws(() => loadConfig(environment)) as Error
    t.ok(error instanceof ConfigError, JSON.stringify(environment))
    t.match(error.message, message)
    t.notMatch(error.message, /\n/, 'one line')
  }
})

t.test('account-lifecycle settings: defaults and values', async (t) => {
  t.match(loadConfig({}), {
    mail: { smtpUrl: undefined, publicUrl: 'http://localhost:3000', maxAttempts: 8, retryDelayMs: 10_000 },
    requireEmailVerification: false,
    passwordResetTtlSeconds: 1800,
    emailVerificationTtlSeconds: 86400,
    rateLimit: { recoveryMax: 20, recoveryAccountMax: 5 }
  })
  t.match(loadConfig({ SMTP_URL: 'smtp://127.0.0.1:2525', PUBLIC_URL: 'https://accounts.example.com/', MAIL_FROM: 'Accounts <a@example.com>' }), {
    mail: { smtpUrl: 'smtp://127.0.0.1:2525', publicUrl: 'https://accounts.example.com', from: 'Accounts <a@example.com>' }
  })
  t.match(loadConfig({ MAIL_MAX_ATTEMPTS: '3', MAIL_RETRY_DELAY: '250ms' }), { mail: { maxAttempts: 3, retryDelayMs: 250 } })
  t.match(loadConfig({ NODE_ENV: 'production', REQUIRE_EMAIL_VERIFICATION: 'true', SMTP_URL: 'smtps://mail.example.com' }), { requireEmailVerification: true })
  t.match(loadConfig({ NODE_ENV: 'development', REQUIRE_EMAIL_VERIFICATION: 'true' }), { requireEmailVerification: true }, 'outside production the log stands in for mail')
})

t.test('webhooks: none without WEBHOOK_URL; with it, its secret and WEBHOOK_MAX_ATTEMPTS (8 by default)', async (t) => {
  t.equal(loadConfig({}).webhooks, undefined)
  t.equal(loadConfig({ WEBHOOK_SECRET: SECRET }).webhooks, undefined, 'a secret alone sends nothing')
  t.same(loadConfig({ WEBHOOK_URL: 'https://hooks.example.com/in', WEBHOOK_SECRET: SECRET }).webhooks, { url: 'https://hooks.example.com/in', secret: SECRET, maxAttempts: 8 })
  t.match(loadConfig({ WEBHOOK_URL: 'http://127.0.0.1:9000/hooks', WEBHOOK_SECRET: SECRET, WEBHOOK_MAX_ATTEMPTS: '3' }).webhooks, { maxAttempts: 3 })
  const production = { NODE_ENV: 'production', WEBHOOK_SECRET: SECRET }
  t.match(loadConfig({ ...production, WEBHOOK_URL: 'http://localhost:9000/hooks' }).webhooks, { url: 'http://localhost:9000/hooks' }, 'production takes the machine itself over http')
  t.match(loadConfig({ ...production, WEBHOOK_URL: 'https://hooks.example.com' }).webhooks, { url: 'https://hooks.example.com' })
})

t.test('MFA_TOKEN_TTL: five minutes by default, in any duration form', async (t) => {
  t.equal(loadConfig({}).mfaTokenTtlSeconds, 300)
  t.equal(loadConfig({ MFA_TOKEN_TTL: '90s' }).mfaTokenTtlSeconds, 90)
  t.equal(loadConfig({ MFA_TOKEN_TTL: '120' }).mfaTokenTtlSeconds, 120)
})

t.test('TRUST_PROXY takes false, a hop count, or proxy addresses and CIDRs (Fastify\'s forms)', async (t) => {
  t.equal(loadConfig({}).trustProxy, false, 'off by default')
  t.equal(loadConfig({ TRUST_PROXY: 'false' }).trustProxy, false)
  t.equal(loadConfig({ TRUST_PROXY: '0' }).trustProxy, false)
  t.equal(loadConfig({ TRUST_PROXY: '2' }).trustProxy, 2)
  t.same(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.1,fd00::/8, loopback' }).trustProxy, ['10.0.0.0/8', '192.168.1.1', 'fd00::/8', 'loopback'])
  t.equal(loadConfig({ TRUST_PROXY: 'true' }).trustProxy, true, 'every hop, outside production')
  for (const bad of ['yes', '10.0.0.0/33', '10.0.0.1, proxy.internal', 'fd00::/129', ',']) {
    t.throws(() => loadConfig({ TRUST_PROXY: bad }), /^Invalid setting: TRUST_PROXY /, `"${bad}" refused`)
  }
})

t.test('production refuses unsafe settings with one line naming the setting', async (t) => {
  const production = { NODE_ENV: 'production' }
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ TRUST_PROXY: 'true' }, /^Invalid setting: TRUST_PROXY=true is refused in production/],
    [{ COOKIE_SECURE: 'false' }, /^Invalid setting: COOKIE_SECURE=false is refused in production/],
    [{ PUBLIC_URL: 'http://accounts.example.com' }, /^Invalid setting: PUBLIC_URL must start with https:\/\//],
    [{ PUBLIC_URL: 'http://localhost.example.com' }, /^Invalid setting: PUBLIC_URL /],
    [{ PUBLIC_URL: 'http://127.0.0.1:3000' }, /^Invalid setting: PUBLIC_URL /]
  ]
  for (const [environment, message] of cases) {
    let error: unknown
    try { loadConfig({ ...production, ...environment }) } catch (caught) { error = caught }
    t.ok(error instanceof ConfigError, `${JSON.stringify(environment)} refused`)
    t.match((error as Error).message, message)
    t.notOk((error as Error).message.includes('\n'), 'one line')
  }
  t.ok(loadConfig({ ...production, TRUST_PROXY: '1', PUBLIC_URL: 'https://accounts.example.com' }), 'a hop count and https are fine')
  t.ok(loadConfig({ ...production, PUBLIC_URL: 'http://localhost' }), 'http://localhost is excepted')
  t.ok(loadConfig({ ...production, PUBLIC_URL: 'http://localhost:8080/app' }), 'with a port too')
  t.ok(loadConfig({ TRUST_PROXY: 'true', COOKIE_SECURE: 'false', PUBLIC_URL: 'http://dev.internal' }), 'outside production all of these are allowed')
})

t.test('DOCS follows NODE_ENV; METRICS_PORT and METRICS_HOST; SIGNING_KEY_ENCRYPTION_KEY is 32 bytes of base64', async (t) => {
  t.equal(loadConfig({}).docs, true, 'docs in development')
  t.equal(loadConfig({ NODE_ENV: 'production' }).docs, false, 'no docs in production')
  t.equal(loadConfig({ NODE_ENV: 'production', DOCS: 'true' }).docs, true)
  t.same(loadConfig({}).metrics, { port: undefined, host: '127.0.0.1' })
  t.same(loadConfig({ METRICS_PORT: '9100', METRICS_HOST: '0.0.0.0' }).metrics, { port: 9100, host: '0.0.0.0' })
  t.throws(() => loadConfig({ METRICS_PORT: 'x' }), /^Invalid setting: METRICS_PORT /)
  t.throws(() => loadConfig({ DOCS: 'maybe' }), /^Invalid setting: DOCS /)
  const key = Buffer.alloc(32, 7)
  t.same(loadConfig({ SIGNING_KEY_ENCRYPTION_KEY: key.toString('base64') }).signingKeyEncryptionKey, key)
  for (const bad of ['short', Buffer.alloc(16).toString('base64'), Buffer.alloc(33).toString('base64'), `${key.toString('base64').slice(0, -2)}!=`]) {
    t.throws(() => loadConfig({ SIGNING_KEY_ENCRYPTION_KEY: bad }), /^Invalid setting: SIGNING_KEY_ENCRYPTION_KEY /, `${bad} refused`)
  }
})

t.test('ADMIN_REQUIRE_MFA follows NODE_ENV (on in production) unless set', async (t) => {
  t.equal(loadConfig({ NODE_ENV: 'production' }).adminRequireMfa, true)
  t.equal(loadConfig({ NODE_ENV: 'development' }).adminRequireMfa, false)
  t.equal(loadConfig({ NODE_ENV: 'test' }).adminRequireMfa, false)
  t.equal(loadConfig({ NODE_ENV: 'production', ADMIN_REQUIRE_MFA: 'false' }).adminRequireMfa, false)
  t.equal(loadConfig({ NODE_ENV: 'development', ADMIN_REQUIRE_MFA: 'true' }).adminRequireMfa, true)
  t.throws(() => loadConfig({ ADMIN_REQUIRE_MFA: 'maybe' }), /ADMIN_REQUIRE_MFA/)
})
