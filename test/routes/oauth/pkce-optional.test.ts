import t, { type Test } from 'tap'
import { runAdmin } from '../../../src/admin.js'
import { testDatabaseUrl } from '../../fixtures/database.js'
import { registerUser } from '../../fixtures/factories.js'
import { authorizeInBrowser, CookieJar, providerService, REDIRECT_URI } from '../../fixtures/oauth.js'

// Issue 34, item 3: PKCE stays required for public clients and by default; an operator may register a
// confidential client that cannot send it (passport-openidconnect, the conformance suite's basic plan)
// with `account-service clients add ... --pkce optional`.

async function cli (databaseUrl: string, ...args: string[]) {
  const stdout: string[] = []
  const stderr: string[] = []
  const code = await runAdmin(args, { out: line => { stdout.push(line) }, err: line => { stderr.push(line) }, env: { DATABASE_URL: databaseUrl } })
  return { code, stdout: stdout.join('\n'), stderr: stderr.join('\n') }
}

/** The service and a person, with the apps added by the CLI as an operator does. */
async function service (t: Test) {
  const databaseUrl = await testDatabaseUrl(t, { persistent: true })
  const { server, baseUrl } = await providerService(t, { env: { DATABASE_URL: databaseUrl } })
  const person = await registerUser(server, 'header')
  async function add (...options: string[]): Promise<{ clientId: string, clientSecret?: string }> {
    const added = await cli(databaseUrl, 'clients', 'add', 'Legacy App', '--redirect-uri', REDIRECT_URI, '--json', ...options)
    if (added.code !== 0) throw new Error(added.stderr)
    const { client_id: clientId, client_secret: clientSecret } = JSON.parse(added.stdout) as { client_id: string, client_secret?: string }
    return { clientId, clientSecret }
  }
  /** An authorization without code_challenge, as passport-openidconnect sends it: the URL the browser ends at. */
  async function authorizeWithoutPkce (app: { clientId: string }): Promise<URL> {
    const url = new URL(`${baseUrl}/oauth/authorize`)
    url.search = new URLSearchParams({ client_id: app.clientId, response_type: 'code', scope: 'openid email', redirect_uri: REDIRECT_URI, state: 'state-1' }).toString()
    return await authorizeInBrowser(baseUrl, new CookieJar(), url, { person })
  }
  /** The code exchanged with the secret in HTTP Basic, or (`inForm`) in the form's client_secret, as passport-openidconnect sends it. */
  async function exchange (app: { clientId: string, clientSecret?: string }, code: string, { inForm = false } = {}) {
    const form = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI }
    const answer = await fetch(`${baseUrl}/oauth/token`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        ...(inForm ? {} : { authorization: `Basic ${Buffer.from(`${app.clientId}:${app.clientSecret ?? ''}`).toString('base64')}` })
      },
      body: new URLSearchParams(inForm ? { ...form, client_id: app.clientId, client_secret: app.clientSecret ?? '' } : form)
    })
    return { status: answer.status, body: await answer.json() as Record<string, unknown> }
  }
  return { databaseUrl, add, authorizeWithoutPkce, exchange }
}

t.test('a confidential client added with --pkce optional completes the code flow without code_challenge', async (t) => {
  const { add, authorizeWithoutPkce, exchange } = await service(t)
  const app = await add('--pkce', 'optional')
  const callback = await authorizeWithoutPkce(app)
  const code = callback.searchParams.get('code')
  t.ok(code, `a code: ${callback.href}`)
  const tokens = await exchange(app, code ?? '')
  t.equal(tokens.status, 200)
  t.ok(tokens.body.id_token)
  t.ok(tokens.body.access_token)
})

t.test('an app that sends its secret in the form, as passport-openidconnect does by default, gets its tokens too (oidc-provider takes client_secret_post for a client_secret_basic client)', async (t) => {
  const { add, authorizeWithoutPkce, exchange } = await service(t)
  const app = await add('--pkce', 'optional')
  const tokens = await exchange(app, (await authorizeWithoutPkce(app)).searchParams.get('code') ?? '', { inForm: true })
  t.equal(tokens.status, 200)
  t.ok(tokens.body.id_token)
})

t.test('without the flag a confidential client must send PKCE: an authorization without it is refused', async (t) => {
  const { add, authorizeWithoutPkce } = await service(t)
  const refused = await authorizeWithoutPkce(await add())
  t.equal(refused.searchParams.get('error'), 'invalid_request')
  t.match(refused.searchParams.get('error_description'), /PKCE/)
  t.equal(refused.searchParams.get('code'), null)
})

t.test('a public client can never opt out: the CLI refuses --pkce optional with --public; --pkce takes only required or optional', async (t) => {
  const { databaseUrl } = await service(t)
  const publicApp = await cli(databaseUrl, 'clients', 'add', 'SPA', '--redirect-uri', REDIRECT_URI, '--public', '--pkce', 'optional')
  t.equal(publicApp.code, 2)
  t.match(publicApp.stderr, /public client must send PKCE/)
  const unknown = await cli(databaseUrl, 'clients', 'add', 'App', '--redirect-uri', REDIRECT_URI, '--pkce', 'sometimes')
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /--pkce is one of required, optional/)
  t.equal((await cli(databaseUrl, 'clients', 'list')).stdout, 'no clients', 'nothing was added')
})

t.test('clients list shows the choice; a public client stored with pkce optional (by hand) still needs PKCE', async (t) => {
  const { databaseUrl, add, authorizeWithoutPkce } = await service(t)
  const app = await add('--pkce', 'optional')
  t.match((await cli(databaseUrl, 'clients', 'list')).stdout, new RegExp(`${app.clientId} {2}Legacy App {2}confidential {2}pkce optional`))
  const listed = JSON.parse((await cli(databaseUrl, 'clients', 'list', '--json')).stdout) as Array<{ client_id: string, pkce: string }>
  t.equal(listed.find(client => client.client_id === app.clientId)?.pkce, 'optional')

  const publicApp = await add('--public')
  const { openStore } = await import('../../../db/open.js')
  const store = await openStore(databaseUrl)
  const stored = await store.findOAuthModel('Client', publicApp.clientId, new Date())
  await store.upsertOAuthModel('Client', publicApp.clientId, { ...stored?.payload, pkce: 'optional' }, null)
  await store.close()
  const refused = await authorizeWithoutPkce(publicApp)
  t.equal(refused.searchParams.get('error'), 'invalid_request', 'the provider asks PKCE of every public client')
})

t.test('dynamic registration cannot opt out: a registered client asking pkce optional is told required', async (t) => {
  const token = 'registration-token-0123456789'
  const { baseUrl } = await providerService(t, { env: { OAUTH_REGISTRATION_TOKEN: token } })
  const answer = await fetch(`${baseUrl}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ client_name: 'Registered', redirect_uris: [REDIRECT_URI], pkce: 'optional' })
  })
  t.equal(answer.status, 201)
  t.equal((await answer.json()).pkce, 'required', 'only the operator opts a client out')
})
