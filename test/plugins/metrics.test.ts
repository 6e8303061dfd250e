import t from 'tap'
import { build } from '../fixtures/build.js'
import { cookieValue, loggedInUser, registerUser } from '../fixtures/factories.js'
import { SoftwareCredential } from '../fixtures/authenticator.js'
import { providerSignIn, serviceWithProvider } from '../fixtures/provider-service.js'

/** The value of one series in Prometheus text format (0 when absent). */
function sample (text: string, series: string): number {
  const line = text.split('\n').find(candidate => candidate.startsWith(`${series} `))
  return line === undefined ? 0 : Number(line.slice(series.length + 1))
}

t.test('GET /metrics counts requests per route pattern with their latency', async (t) => {
  const server = await build(t)
  const session = await loggedInUser(server, 'cookie')
  for (let i = 0; i < 3; i++) await server.inject({ url: `/users/${session.user.id}`, cookies: { accessToken: session.accessToken } })
  await server.inject('/no/such/route')
  const response = await server.inject('/metrics')
  t.equal(response.statusCode, 200)
  t.match(response.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  const text = response.body
  t.equal(sample(text, 'http_requests_total{method="GET",route="/users/:userId",status_code="200"}'), 3, 'by pattern, not by URL')
  t.equal(sample(text, 'http_request_duration_seconds_count{method="GET",route="/users/:userId",status_code="200"}'), 3)
  t.equal(sample(text, 'http_requests_total{method="GET",route="unmatched",status_code="404"}'), 1, 'unknown URLs share one series')
  t.notMatch(text, /\/users\/\d/, 'no ids in labels')
  t.match(text, /^process_resident_memory_bytes \d+/m, 'process metrics too')
})

t.test('logins ok and failed, refreshes, reuse detections and rate-limit hits are counted', async (t) => {
  const server = await build(t, { env: { REFRESH_REUSE_GRACE: '0', RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_MAX: '3' } })
  const user = await registerUser(server, 'cookie')
  const login = await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: user.password } })
  t.equal(login.statusCode, 200)
  const first = cookieValue(login, 'refreshToken')
  const refreshed = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: first } })
  t.equal(refreshed.statusCode, 200)
  const replayed = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: first } })
  t.equal(replayed.json().code, 'REFRESH_TOKEN_REUSED')
  const unknown = await server.inject({ method: 'POST', url: '/auth/refresh-token', cookies: { refreshToken: 'not-a-token' } })
  t.equal(unknown.statusCode, 401)
  for (let i = 0; i < 2; i++) {
    t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: 'wrong password' } })).statusCode, 401)
  }
  t.equal((await server.inject({ method: 'POST', url: '/auth/login', payload: { email: user.email, password: 'wrong password' } })).statusCode, 429)

  const text = (await server.inject('/metrics')).body
  t.equal(sample(text, 'auth_logins_total{result="ok"}'), 1)
  t.equal(sample(text, 'auth_logins_total{result="failed"}'), 2, 'the throttled attempt is a rate-limit hit, not a failure')
  t.equal(sample(text, 'auth_refreshes_total{result="ok"}'), 1)
  t.equal(sample(text, 'auth_refreshes_total{result="failed"}'), 2)
  t.equal(sample(text, 'auth_refresh_reuse_detected_total'), 1)
  t.equal(sample(text, 'rate_limit_hits_total{route="/auth/login"}'), 1)
})

t.test('the counters of each mounted variant add up in one place', async (t) => {
  const server = await build(t, { mounts: [{ variant: 'header', prefix: '/v1' }, { variant: 'cookie', prefix: '/v2' }] })
  await loggedInUser(server, 'header', {}, '/v1')
  await loggedInUser(server, 'cookie', {}, '/v2')
  const text = (await server.inject('/metrics')).body
  t.equal(sample(text, 'auth_logins_total{result="ok"}'), 2)
  t.equal(sample(text, 'http_requests_total{method="POST",route="/v1/auth/login",status_code="200"}'), 1)
  t.equal(sample(text, 'http_requests_total{method="POST",route="/v2/auth/login",status_code="200"}'), 1)
})

t.test('passkey logins and provider sign-ins count as logins, as the routes declare', async (t) => {
  const service = await serviceWithProvider(t, 'cookie')
  const { server } = service
  const logins = async (result: 'ok' | 'failed') => sample((await server.inject('/metrics')).body, `auth_logins_total{result="${result}"}`)
  const session = await loggedInUser(server, 'cookie')
  const before = await logins('ok')

  const credential = new SoftwareCredential(service.baseUrl)
  const offered = await server.inject({ method: 'POST', url: '/auth/passkeys/registration-options', cookies: { accessToken: session.accessToken } })
  t.equal((await server.inject({ method: 'POST', url: '/auth/passkeys', cookies: { accessToken: session.accessToken }, payload: credential.register(offered.json()) })).statusCode, 201)
  const options = (await server.inject({ method: 'POST', url: '/auth/passkeys/authentication-options' })).json()
  t.equal((await server.inject({ method: 'POST', url: '/auth/passkeys/login', payload: credential.assert(options) })).statusCode, 200)
  t.equal(await logins('ok'), before + 1, 'the passkey login counted')
  const unknown = new SoftwareCredential(service.baseUrl)
  const again = (await server.inject({ method: 'POST', url: '/auth/passkeys/authentication-options' })).json()
  t.equal((await server.inject({ method: 'POST', url: '/auth/passkeys/login', payload: unknown.assert(again) })).statusCode, 401)
  t.equal(await logins('failed'), 1, 'a refused passkey counts as a failed login')

  service.provider.accounts.set('grace', { email: 'grace@example.com', email_verified: true })
  t.equal((await providerSignIn(service, 'grace')).callback.status, 200)
  t.equal(await logins('ok'), before + 2, 'the provider sign-in counted')
})
