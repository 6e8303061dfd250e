import t from 'tap'
import { openStore } from '../../db/open.js'
import { runAdmin } from '../../src/admin.js'
import { assertError } from '../fixtures/assertions.js'
import { build } from '../fixtures/build.js'
import { testDatabaseUrl } from '../fixtures/database.js'
import { loggedInUser, newUserBody } from '../fixtures/factories.js'
import { CookieJar, freePort, providerSettings, startOpenIdProvider, throughProvider } from '../fixtures/openid-provider.js'

// Finding 10 (issue 21): names reached the operator's terminal raw, escape sequences and all.
const ESC_NAME = 'Eve\u001b]8;;https://evil.test\u0007click\u001b[2J'
const BIDI_NAME = 'Mallory\u202egpj.exe'
const C1_NAME = 'Trudy\u009b31m\u007f'
/** What no line of the CLI's output may hold: C0 (but the line break), DEL, C1, and the bidi controls. */
// eslint-disable-next-line no-control-regex -- the very characters the output must not hold
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/

async function cliOutput (...argv: string[]): Promise<{ code: number, output: string }> {
  const lines: string[] = []
  const code = await runAdmin(argv, { out: line => { lines.push(line) } })
  return { code, output: lines.join('\n') }
}

t.test('the admin CLI shows a name stored with control characters escaped, never raw', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const store = await openStore(databaseUrl)
  // As an older row would hold them, straight in the store: the API refuses such names now.
  const user = await store.createUser({ firstName: ESC_NAME, lastName: BIDI_NAME, username: null, email: 'eve@example.test', passwordHash: null })
  await store.createUser({ firstName: C1_NAME, lastName: 'Plain', username: null, email: 'trudy@example.test', passwordHash: null })
  await store.close()

  for (const argv of [['users', 'list'], ['users', 'show', String(user.id)], ['users', 'list', '--json'], ['users', 'show', 'eve@example.test', '--json']]) {
    const { code, output } = await cliOutput(...argv, '--database', databaseUrl)
    t.equal(code, 0, argv.join(' '))
    t.notOk(output.includes('\u001b'), `${argv.join(' ')}: no ESC byte reaches the terminal`)
    t.notMatch(output, RAW_CONTROL, `${argv.join(' ')}: no control character at all`)
    t.match(output, 'Eve', 'the name is still there')
  }
  const text = (await cliOutput('users', 'list', '--database', databaseUrl)).output
  t.match(text, 'Eve\\x1b]8;;https://evil.test\\x07click\\x1b[2J', 'C0 shown as \\xNN')
  t.match(text, 'Mallory\\u202egpj.exe', 'bidi controls shown as \\uNNNN')
  t.match(text, 'Trudy\\x9b31m\\x7f', 'C1 and DEL shown as \\xNN')
  const json = JSON.parse((await cliOutput('users', 'list', '--json', '--database', databaseUrl)).output)
  t.same(json.map((row: { first_name: string, last_name: string }) => [row.first_name, row.last_name]), [[ESC_NAME, BIDI_NAME], [C1_NAME, 'Plain']],
    '--json stays valid JSON that reads back to the stored names')
})

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant} variant: register${variant === 'cookie' ? ' and PATCH' : ''} with a control character in a name is 400`, async (t) => {
    const server = await build(t, { variant })
    const names = [ESC_NAME, BIDI_NAME, C1_NAME, 'Ada\u0000', 'Ada\u200fL', 'Ada\u2066', 'Ada\u061c', 'Ada\tL', 'Ada\nLovelace']
    for (const name of names) {
      for (const field of ['first_name', 'last_name']) {
        const response = await server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody(variant, { [field]: name }) })
        assertError(t, response, 400, 'VALIDATION_FAILED')
      }
    }
    if (variant === 'header') return // the header variant has no PATCH /users/:userId
    assertError(t, await server.inject({ method: 'POST', url: '/auth/register', payload: newUserBody(variant, { username: 'eve\u202e' }) }), 400, 'VALIDATION_FAILED')
    const session = await loggedInUser(server, variant)
    for (const name of names) {
      for (const field of ['first_name', 'last_name', 'username']) {
        const response = await server.inject({ method: 'PATCH', url: `/users/${session.user.id}`, cookies: { accessToken: session.accessToken }, payload: { [field]: name } })
        assertError(t, response, 400, 'VALIDATION_FAILED')
      }
    }
    const fine = await server.inject({ method: 'PATCH', url: `/users/${session.user.id}`, cookies: { accessToken: session.accessToken }, payload: { first_name: 'Zoë', last_name: 'O\'Brien-Łukasz 李' } })
    t.equal(fine.statusCode, 204, 'letters of any script still pass')
  })
}

t.test('a provider\'s name claims lose their control characters before they become the account\'s names', async (t) => {
  const port = await freePort()
  const baseUrl = `http://localhost:${port}`
  const provider = await startOpenIdProvider(t, [`${baseUrl}/auth/oidc/test/callback`])
  const server = await build(t, { variant: 'cookie', env: { PUBLIC_URL: baseUrl, COOKIE_SECURE: 'false', OIDC_PROVIDERS: 'test', ...providerSettings('test', provider) } })
  await server.listen({ port, host: 'localhost' })
  provider.accounts.set('eve', { email: 'eve@example.test', email_verified: true, given_name: ESC_NAME, family_name: '\u202e\u2066' })
  const jar = new CookieJar()
  const { callbackUrl } = await throughProvider(`${baseUrl}/auth/oidc/test`, jar, { login: 'eve' })
  const callback = await fetch(callbackUrl ?? '', { redirect: 'manual', headers: { cookie: jar.header() } })
  t.equal(callback.status, 200, 'signed in')
  const user = await server.store.findUserByEmail('eve@example.test')
  t.equal(user?.firstName, 'Eve]8;;https://evil.test' + 'click[2J', 'the given name without its control characters')
  t.equal(user?.lastName, user?.firstName, 'a family name of controls alone is none: the given name stands in')
})
