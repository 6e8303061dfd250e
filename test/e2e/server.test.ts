import t from 'tap'
import { startMailbox, tokenFromLink } from '../fixtures/mailbox.js'
import { runNode, SERVER_ENTRY, startServer } from '../fixtures/process.js'
import { call } from '../fixtures/http.js'
import { testDatabaseUrl } from '../fixtures/database.js'

/** Set-Cookie headers as a browser reads them: name, value and attributes. */
function parseSetCookies (headers: Headers) {
  return Object.fromEntries(headers.getSetCookie().map((line) => {
    const [pair, ...attributes] = line.split(';').map(part => part.trim())
    const [name, value] = pair.split('=')
    return [name, { value, attributes: attributes.map(attribute => attribute.toLowerCase()) }]
  }))
}

t.test('header variant: a whole session over HTTP', async (t) => {
  const { baseUrl } = await startServer(t, { API_VARIANT: 'header', DATABASE_URL: await testDatabaseUrl(t, { persistent: true }) })
  const health = await call(baseUrl, 'GET', '/health')
  t.equal(health.status, 200)

  const registered = await call(baseUrl, 'POST', '/auth/register', { body: { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', password: 'analytical engine' } })
  t.equal(registered.status, 201)
  const login = await call(baseUrl, 'POST', '/auth/login', { body: { email: 'ada@example.com', password: 'analytical engine' } })
  t.equal(login.status, 200)
  const { accessToken, refreshToken, user } = login.body
  t.same(user, registered.body)

  const read = await call(baseUrl, 'GET', `/users/${user.id}`, { headers: { authorization: `Bearer ${accessToken}`, 'x-refresh-token': `Bearer ${refreshToken}` } })
  t.same(read.body, user)
  const refreshed = await call(baseUrl, 'POST', '/auth/refresh-token', { headers: { authorization: `Bearer ${accessToken}`, 'x-refresh-token': `Bearer ${refreshToken}` } })
  t.equal(refreshed.status, 200)
  const readAgain = await call(baseUrl, 'GET', `/users/${user.id}`, { headers: { authorization: `Bearer ${refreshed.body.accessToken}` } })
  t.same(readAgain.body, user)
  const authMe = await call(baseUrl, 'POST', '/auth/auth-me', { headers: { authorization: `Bearer ${refreshed.body.accessToken}`, 'x-refresh-token': `Bearer ${refreshToken}` } })
  t.equal(authMe.status, 200)
})

t.test('cookie variant: a whole session over HTTP with real Set-Cookie headers', async (t) => {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const { baseUrl, child } = await startServer(t, { API_VARIANT: 'cookie', DATABASE_URL: databaseUrl })

  const registered = await call(baseUrl, 'POST', '/auth/register', { body: { first_name: 'Ada', last_name: 'Lovelace', username: 'ada', email: 'ada@example.com', password: 'analytical engine' } })
  t.equal(registered.status, 201)
  const login = await call(baseUrl, 'POST', '/auth/login', { body: { email: 'ada@example.com', password: 'analytical engine' } })
  t.equal(login.status, 200)
  t.notOk('refreshToken' in login.body)
  const cookies = parseSetCookies(login.headers)
  t.same(Object.keys(cookies).sort(), ['accessToken', 'refreshToken'])
  t.equal(cookies.accessToken.value, login.body.accessToken)
  for (const expected of ['httponly', 'secure', 'samesite=strict', 'path=/', 'max-age=900']) t.ok(cookies.accessToken.attributes.includes(expected), `accessToken ${expected}`)
  for (const expected of ['httponly', 'secure', 'samesite=strict', 'path=/auth', 'max-age=2592000']) t.ok(cookies.refreshToken.attributes.includes(expected), `refreshToken ${expected}`)

  const id = registered.body.id
  const jar = (access: string, refresh: string) => ({ cookie: `accessToken=${access}; refreshToken=${refresh}` })
  const read = await call(baseUrl, 'GET', `/users/${id}`, { headers: jar(cookies.accessToken.value, cookies.refreshToken.value) })
  t.same(read.body, registered.body)

  const refreshed = await call(baseUrl, 'POST', '/auth/refresh-token', { headers: { cookie: `refreshToken=${cookies.refreshToken.value}` } })
  t.equal(refreshed.status, 200)
  const rotated = parseSetCookies(refreshed.headers)
  t.not(rotated.refreshToken.value, cookies.refreshToken.value, 'the refresh cookie rotated')
  t.equal(rotated.accessToken.value, refreshed.body.accessToken)

  const patched = await call(baseUrl, 'PATCH', `/users/${id}`, { headers: jar(rotated.accessToken.value, rotated.refreshToken.value), body: { first_name: 'Augusta', username: 'countess' } })
  t.equal(patched.status, 204)
  t.equal(patched.body, undefined)
  const readBack = await call(baseUrl, 'GET', `/users/${id}`, { headers: jar(rotated.accessToken.value, rotated.refreshToken.value) })
  t.same(readBack.body, { ...registered.body, first_name: 'Augusta', username: 'countess' })

  // A restart keeps every user.
  child.kill('SIGTERM')
  await new Promise(resolve => child.once('exit', resolve))
  const restarted = await startServer(t, { API_VARIANT: 'cookie', DATABASE_URL: databaseUrl })
  const after = await call(restarted.baseUrl, 'POST', '/auth/login', { body: { email: 'ada@example.com', password: 'analytical engine' } })
  t.equal(after.status, 200)
  t.equal(after.body.user.first_name, 'Augusta')
})

t.test('a bad setting stops the start with one line naming it', async (t) => {
  const result = await runNode([SERVER_ENTRY], { PATH: process.env.PATH, PORT: 'eighty' })
  t.equal(result.status, 1)
  t.match(result.stderr.trim(), /^Invalid setting: PORT [^\n]+$/)
})

t.test('production with REQUIRE_EMAIL_VERIFICATION=true and no SMTP_URL refuses to start with one line', async (t) => {
  const env = { PATH: process.env.PATH, NODE_ENV: 'production', REQUIRE_EMAIL_VERIFICATION: 'true' }
  const result = await runNode([SERVER_ENTRY], env)
  t.equal(result.status, 1)
  t.match(result.stderr.trim(), /^Invalid setting: SMTP_URL is required [^\n]+$/)
})

t.test('header variant over HTTP: the reset link arrives by SMTP and ends every session', async (t) => {
  const mailbox = await startMailbox(t)
  const publicUrl = 'https://accounts.example.com'
  const { baseUrl } = await startServer(t, { API_VARIANT: 'header', DATABASE_URL: await testDatabaseUrl(t, { persistent: true }), SMTP_URL: mailbox.smtpUrl, PUBLIC_URL: publicUrl })
  const user = { first_name: 'Ada', last_name: 'Lovelace', email: 'ada@example.com', password: 'analytical engine' }
  t.equal((await call(baseUrl, 'POST', '/auth/register', { body: user })).status, 201)
  const login = await call(baseUrl, 'POST', '/auth/login', { body: { email: user.email, password: user.password } })
  const authorization = { authorization: `Bearer ${login.body.accessToken}` }

  t.equal((await call(baseUrl, 'POST', '/auth/forgot-password', { body: { email: user.email } })).status, 202)
  const token = tokenFromLink(await mailbox.next(user.email, 'Reset your password'), publicUrl, '/reset-password')
  t.equal((await call(baseUrl, 'POST', '/auth/reset-password', { body: { token, new_password: 'difference engine' } })).status, 204)
  t.equal((await call(baseUrl, 'GET', '/auth/account', { headers: authorization })).status, 401, 'the old access token stops at once')
  const refresh = await call(baseUrl, 'POST', '/auth/refresh-token', { headers: { ...authorization, 'x-refresh-token': `Bearer ${login.body.refreshToken}` } })
  t.equal(refresh.status, 401)
  t.equal((await call(baseUrl, 'POST', '/auth/login', { body: { email: user.email, password: 'difference engine' } })).status, 200)
})
