import t from 'tap'
import { registerUser } from '../../fixtures/factories.js'
import { providerService } from '../../fixtures/oauth.js'

// Issue 34, item 6: the JWKS had no CORS, so a browser app could not verify a signature, and the only
// workaround, ALLOWED_ORIGINS, also opened the cookie API. The public, credential-less documents
// (JWKS, discovery, status lists) answer any origin with `*`, never with credentials; nothing else opens.

const ORIGIN = 'https://app.example'
const PUBLIC_DOCUMENTS = ['/.well-known/jwks.json', '/.well-known/openid-configuration', '/statuslists/1']

for (const allowedOrigins of ['', ORIGIN]) {
  const setting = allowedOrigins === '' ? 'without ALLOWED_ORIGINS' : 'with the origin in ALLOWED_ORIGINS'
  t.test(`a cross-origin GET of each public document gets Access-Control-Allow-Origin: *, no credentials; /auth/* opens no more (${setting})`, async (t) => {
    const { server, baseUrl } = await providerService(t, { variant: 'cookie', env: allowedOrigins === '' ? {} : { ALLOWED_ORIGINS: allowedOrigins } })
    for (const path of PUBLIC_DOCUMENTS) {
      const answer = await fetch(`${baseUrl}${path}`, { headers: { origin: ORIGIN } })
      t.equal(answer.status, 200, path)
      t.equal(answer.headers.get('access-control-allow-origin'), '*', `${path}: any origin`)
      t.equal(answer.headers.get('access-control-allow-credentials'), null, `${path}: no credentials`)
      await answer.body?.cancel()
    }

    const user = await registerUser(server, 'cookie')
    const login = await fetch(`${baseUrl}/auth/login`, {
      method: 'POST',
      headers: { origin: baseUrl, 'content-type': 'application/json' },
      body: JSON.stringify({ email: user.email, password: user.password })
    })
    const cookie = login.headers.getSetCookie().map(line => line.split(';')[0]).join('; ')
    const me = await fetch(`${baseUrl}/auth/sessions`, { headers: { origin: ORIGIN, cookie } })
    await me.body?.cancel()
    t.equal(me.status, 200, 'the cookie API reads the sessions (a GET is no cross-site write)')
    if (allowedOrigins === '') {
      t.equal(me.headers.get('access-control-allow-origin'), null, 'the cookie API answers the app\'s origin no CORS')
    } else {
      t.equal(me.headers.get('access-control-allow-origin'), ORIGIN, 'the cookie API answers only the listed origin, as before')
      t.equal(me.headers.get('access-control-allow-credentials'), 'true')
    }
    const other = await fetch(`${baseUrl}/auth/sessions`, { headers: { origin: 'https://elsewhere.example', cookie } })
    await other.body?.cancel()
    t.equal(other.headers.get('access-control-allow-origin'), null, 'an unlisted origin gets no CORS from the cookie API')
  })
}
