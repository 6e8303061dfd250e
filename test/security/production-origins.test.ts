import { spawnSync } from 'node:child_process'
import t from 'tap'
import { loadConfig } from '../../core/config.js'
import { SERVER_ENTRY } from '../fixtures/process.js'

// Issue 21, finding 12: production took http:// origins, whose pages anyone on the network path can rewrite,
// as trusted for credentialed cross-origin requests (ALLOWED_ORIGINS) and for passkeys (WEBAUTHN_ORIGINS).
const PRODUCTION = { NODE_ENV: 'production', PUBLIC_URL: 'https://accounts.example.com' }

const UNSAFE: Array<[Record<string, string>, string]> = [
  [{ ALLOWED_ORIGINS: 'http://app.example.com' }, 'ALLOWED_ORIGINS'],
  [{ ALLOWED_ORIGINS: 'https://app.example.com,http://admin.example.com:8080' }, 'ALLOWED_ORIGINS'],
  [{ WEBAUTHN_ORIGINS: 'http://accounts.example.com' }, 'WEBAUTHN_ORIGINS'],
  [{ WEBAUTHN_ORIGINS: 'https://accounts.example.com,http://login.accounts.example.com' }, 'WEBAUTHN_ORIGINS']
]

for (const [setting, name] of UNSAFE) {
  t.test(`the real server in production refuses ${JSON.stringify(setting)}: one line naming ${name}, exit 1`, async (t) => {
    const env = { PATH: process.env.PATH, PORT: '0', DATABASE_URL: ':memory:', ...PRODUCTION, ...setting }
    const result = spawnSync(process.execPath, [SERVER_ENTRY], { env, encoding: 'utf8', timeout: 60_000 })
    t.equal(result.status, 1, 'exit code 1')
    t.equal(result.stdout, '', 'nothing else was started or logged')
    t.match(result.stderr.trim(), new RegExp(`^Invalid setting: ${name} has "http://[^\\n]+$`), 'one line naming the setting and the origin')
  })
}

t.test('production takes https:// origins, and http://localhost and http://127.0.0.1 on any port', async (t) => {
  t.match(loadConfig({ ...PRODUCTION, ALLOWED_ORIGINS: 'https://app.example.com,http://localhost:5173,http://127.0.0.1:8080,http://localhost' }), {
    allowedOrigins: ['https://app.example.com', 'http://localhost:5173', 'http://127.0.0.1:8080', 'http://localhost']
  })
  t.match(loadConfig({ ...PRODUCTION, WEBAUTHN_ORIGINS: 'https://accounts.example.com,https://login.accounts.example.com' }), {
    webauthn: { origins: ['https://accounts.example.com', 'https://login.accounts.example.com'] }
  })
  t.match(loadConfig({ NODE_ENV: 'production', PUBLIC_URL: 'http://localhost:3000', WEBAUTHN_ORIGINS: 'http://localhost:3000,http://localhost:5173' }), {
    webauthn: { origins: ['http://localhost:3000', 'http://localhost:5173'] }
  })
  t.match(loadConfig({ NODE_ENV: 'production', PUBLIC_URL: 'http://localhost:3000' }), { webauthn: { origins: ['http://localhost:3000'] } },
    'the default, PUBLIC_URL\'s origin, follows PUBLIC_URL\'s own rule')
  t.throws(() => loadConfig({ ...PRODUCTION, ALLOWED_ORIGINS: 'http://localhost.evil.test' }), /^Invalid setting: ALLOWED_ORIGINS has "http:\/\/localhost\.evil\.test"/,
    'a host that only starts with localhost is no exception')
  t.match(loadConfig({ NODE_ENV: 'development', ALLOWED_ORIGINS: 'http://app.example.com' }), { allowedOrigins: ['http://app.example.com'] }, 'outside production http:// is fine')
})
