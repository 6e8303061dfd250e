import { createHash, randomBytes } from 'node:crypto'
import type { StoreCode } from './builds.js'
import { BENCH_PASSWORD, seededUser } from './seed.js'

/*
 * The OAuth provider under benchmark: two apps written into the store as `account-service clients
 * add` writes them, and what an app's users give it (codes, refresh tokens, access tokens), made
 * over HTTP before a timed window as a browser and an app would: no browser, no openid-client.
 */

export const OAUTH_REDIRECT_URI = 'http://127.0.0.1:4999/callback'

export interface BenchClient {
  clientId: string
  secret: string
  /** The HTTP Basic authorization header of the client (RFC 6749 2.3.1: id and secret form-encoded). */
  basic: string
}

export interface BenchClients {
  /** A first-party web app (trusted: no consent page): authorization_code and refresh_token. */
  app: BenchClient
  /** A machine client: client_credentials only. */
  machine: BenchClient
}

function benchClient (clientId: string, secret: string | undefined): BenchClient {
  if (secret === undefined) throw new Error('a confidential client without a secret')
  const basic = `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`
  return { clientId, secret, basic }
}

/** Registers the bench's two apps in the store at `filename` (its migrations already run), with the code of the build under test. */
export async function seedOAuthClients (filename: string, { openSqliteStore, newClient }: StoreCode): Promise<BenchClients> {
  const store = openSqliteStore(filename)
  try {
    const app = newClient({ name: 'Bench App', redirectUris: [OAUTH_REDIRECT_URI], public: false, trusted: true })
    // The app asks for EdDSA ID tokens (the service key's algorithm): the default, RS256, costs an RSA-2048 signature
    // (about 440 µs here, against 25–40 µs for Ed25519) per code exchange, which would bound the row by itself.
    app.metadata.id_token_signed_response_alg = 'EdDSA'
    const machine = newClient({ name: 'Bench Machine', redirectUris: [], public: false, trusted: false, grants: ['client_credentials'] })
    for (const { metadata } of [app, machine]) await store.upsertOAuthModel('Client', metadata.client_id, metadata, null)
    return { app: benchClient(app.metadata.client_id, app.secret), machine: benchClient(machine.metadata.client_id, machine.secret) }
  } finally {
    await store.close()
  }
}

/** A browser's cookies, by name (the newest value wins; these flows need no more). */
class CookieJar {
  private readonly cookies = new Map<string, string>()
  take (response: Response): void {
    for (const line of response.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const at = pair.indexOf('=')
      const value = pair.slice(at + 1)
      if (value === '' || /max-age=0|expires=thu, 01 jan 1970/i.test(line)) this.cookies.delete(pair.slice(0, at))
      else this.cookies.set(pair.slice(0, at), value)
    }
  }

  header (): string {
    return [...this.cookies].map(([name, value]) => `${name}=${value}`).join('; ')
  }
}

/** One PKCE verifier for the pool: the provider still checks S256 of it at every exchange. */
const PKCE_VERIFIER = randomBytes(32).toString('base64url')
const PKCE_CHALLENGE = createHash('sha256').update(PKCE_VERIFIER).digest('base64url')

export const APP_SCOPE = 'openid email profile'

export interface AppTokens {
  access_token: string
  refresh_token?: string
  id_token?: string
}

/**
 * A user signed in at the provider once (its browser session), who then authorizes the trusted app
 * as often as asked: every authorization request after the first redirects straight to the app with
 * a code (one request, no page).
 */
export class OAuthBrowser {
  private readonly jar = new CookieJar()
  private signedIn: Promise<void> | undefined

  private readonly url: string
  private readonly app: BenchClient
  private readonly userIndex: number

  constructor (url: string, app: BenchClient, userIndex = 1) {
    this.url = url
    this.app = app
    this.userIndex = userIndex
  }

  private async browse (url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers)
    const cookies = this.jar.header()
    if (cookies !== '') headers.set('cookie', cookies)
    const response = await fetch(url, { ...init, headers, redirect: 'manual' })
    this.jar.take(response)
    return response
  }

  /** Follows an authorization request through its redirects and its sign-in and consent steps, to the app's redirect URI. */
  private async authorize (extra: Record<string, string> = {}, scope = APP_SCOPE): Promise<string> {
    const query = new URLSearchParams({
      client_id: this.app.clientId,
      redirect_uri: OAUTH_REDIRECT_URI,
      response_type: 'code',
      scope,
      code_challenge: PKCE_CHALLENGE,
      code_challenge_method: 'S256',
      ...extra
    })
    let next = new URL(`/oauth/authorize?${query}`, this.url)
    for (let hops = 0; hops < 20; hops++) {
      if (next.href.startsWith(OAUTH_REDIRECT_URI)) {
        const code = next.searchParams.get('code')
        if (code === null) throw new Error(`the authorization ended without a code: ${next.href}`)
        return code
      }
      const interaction = /^\/oauth\/interaction\/([^/]+)$/.exec(next.pathname)
      if (interaction !== null) {
        const { prompt } = await (await this.browse(`${next.href}/details`)).json() as { prompt: string }
        let answer: Response
        if (prompt === 'login') {
          const login = await this.browse(`${this.url}/auth/login`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ email: seededUser(this.userIndex).email, password: BENCH_PASSWORD })
          })
          if (login.status !== 200) throw new Error(`bench login answered ${login.status}: ${await login.text()}`)
          const { accessToken } = await login.json() as { accessToken: string }
          answer = await this.browse(`${next.href}/login`, { method: 'POST', headers: { authorization: `Bearer ${accessToken}` } })
        } else {
          answer = await this.browse(`${next.href}/consent`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ allow: true }) })
        }
        if (answer.status !== 200) throw new Error(`the ${prompt} step answered ${answer.status}: ${await answer.text()}`)
        next = new URL((await answer.json() as { location: string }).location, this.url)
        continue
      }
      const response = await this.browse(next.href)
      const location = response.headers.get('location')
      await response.body?.cancel()
      if (location === null) throw new Error(`the authorization stopped at ${next.href} (${response.status})`)
      next = new URL(location, next)
    }
    throw new Error('the authorization took too many redirects')
  }

  /** `count` fresh authorization codes of the app (`inFlight` authorization requests at once); single-use, 60 s to live. */
  async codes (count: number, inFlight = 8): Promise<string[]> {
    await (this.signedIn ??= this.authorize().then(() => undefined))
    const codes: string[] = []
    let asked = 0
    await Promise.all(Array.from({ length: Math.min(inFlight, count) }, async () => {
      while (asked < count) {
        asked++
        codes.push(await this.authorize())
      }
    }))
    return codes
  }

  /** Tokens of a code exchange with offline_access (its consent asked again, as the provider requires for a refresh token). */
  async offlineTokens (): Promise<AppTokens & { refresh_token: string }> {
    await (this.signedIn ??= this.authorize().then(() => undefined))
    const code = await this.authorize({ prompt: 'consent' }, `${APP_SCOPE} offline_access`)
    const tokens = await exchange(this.url, this.app, codeExchangeBody(code))
    if (tokens.refresh_token === undefined) throw new Error('the code exchange with offline_access gave no refresh token')
    return tokens as AppTokens & { refresh_token: string }
  }
}

/** The form body of the authorization_code grant for `code`. */
export function codeExchangeBody (code: string): string {
  return new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: OAUTH_REDIRECT_URI, code_verifier: PKCE_VERIFIER }).toString()
}

export function refreshBody (refreshToken: string): string {
  return new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken }).toString()
}

export const CLIENT_CREDENTIALS_BODY = 'grant_type=client_credentials'

export const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

/** One token request of a client (HTTP Basic), outside any timed window. */
export async function exchange (url: string, client: BenchClient, body: string): Promise<AppTokens> {
  const response = await fetch(`${url}/oauth/token`, { method: 'POST', headers: { ...FORM, authorization: client.basic }, body })
  if (response.status !== 200) throw new Error(`the token endpoint answered ${response.status}: ${await response.text()}`)
  return await response.json() as AppTokens
}

/** One set of offline tokens (a refresh token, an access token) for each of these seeded users, each its own grant. */
export async function offlineTokensOf (url: string, app: BenchClient, userIndexes: number[]): Promise<Array<AppTokens & { refresh_token: string }>> {
  return await Promise.all(userIndexes.map(async (index) => await new OAuthBrowser(url, app, index).offlineTokens()))
}
