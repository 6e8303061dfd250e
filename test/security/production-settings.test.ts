import { spawnSync } from 'node:child_process'
import t from 'tap'
import { SERVER_ENTRY } from '../fixtures/process.js'

// Finding 13: production started with settings that leak tokens or let clients choose their address.
const UNSAFE: Array<[Record<string, string>, string]> = [
  [{ TRUST_PROXY: 'true' }, 'TRUST_PROXY'],
  [{ COOKIE_SECURE: 'false' }, 'COOKIE_SECURE'],
  [{ PUBLIC_URL: 'http://accounts.example.com' }, 'PUBLIC_URL']
]

for (const [setting, name] of UNSAFE) {
  t.test(`the real server in production refuses ${JSON.stringify(setting)}: one line naming ${name}, exit 1`, async (t) => {
    const env = { PATH: process.env.PATH, NODE_ENV: 'production', PORT: '0', DATABASE_URL: ':memory:', ...setting }
    const result = spawnSync(process.execPath, [SERVER_ENTRY], { env, encoding: 'utf8', timeout: 60_000 })
    t.equal(result.status, 1, 'exit code 1')
    t.equal(result.stdout, '', 'nothing else was started or logged')
    t.match(result.stderr.trim(), new RegExp(`^Invalid setting: ${name}[^\\n]+$`), 'one line naming the setting')
  })
}
