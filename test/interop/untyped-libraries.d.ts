// The parts of the relying-party libraries the interop tests use that ship no types of their own
// (their @types packages are not dependencies here): written from each library's source, as of the
// versions in package.json (passport 0.7, passport-openidconnect 0.1, express-session 1.19, simple-oauth2 5.1).

declare module 'express-session' {
  import type { RequestHandler } from 'express'
  interface SessionOptions {
    secret: string
    resave?: boolean
    saveUninitialized?: boolean
    name?: string
  }
  function session (options: SessionOptions): RequestHandler
  export default session
}

declare module 'passport' {
  import type { RequestHandler } from 'express'
  type Done<T> = (error: unknown, value?: T) => void
  /** passport's Authenticator (lib/authenticator.js); the module's default export is one, `Passport` its class. */
  class Authenticator {
    use (name: string, strategy: unknown): this
    use (strategy: unknown): this
    initialize (): RequestHandler
    session (): RequestHandler
    authenticate (strategy: string, options?: { successRedirect?: string, failureRedirect?: string, failureMessage?: boolean }): RequestHandler
    serializeUser<User> (serialize: (user: User, done: Done<unknown>) => void): void
    deserializeUser<User> (deserialize: (stored: unknown, done: Done<User>) => void): void
  }
  const passport: Authenticator & { Passport: typeof Authenticator }
  export default passport
}

declare module 'passport-openidconnect' {
  /** The profile the strategy builds from the ID token's claims (lib/profile.js), and from userinfo when it reads it. */
  export interface Profile {
    id: string
    displayName?: string
    username?: string
    name?: { familyName?: string, givenName?: string, middleName?: string }
    emails?: Array<{ value: string }>
  }
  export interface StrategyOptions {
    issuer: string
    authorizationURL: string
    tokenURL: string
    userInfoURL?: string
    clientID: string
    clientSecret?: string
    callbackURL?: string
    scope?: string | string[]
  }
  type Verified = (error: unknown, user?: unknown, info?: unknown) => void
  /** With nine parameters the strategy reads userinfo too, and gives its profile (with `_json`) apart from the ID token's. */
  export type VerifyWithUserinfo = (issuer: string, userinfoProfile: (Profile & { _json: Record<string, unknown> }) | undefined, idTokenProfile: Profile,
    context: Record<string, unknown>, idToken: string, accessToken: string, refreshToken: string | undefined, params: Record<string, unknown>, done: Verified) => void
  class Strategy {
    name: string
    constructor (options: StrategyOptions, verify: (issuer: string, profile: Profile, done: Verified) => void)
    constructor (options: StrategyOptions, verify: VerifyWithUserinfo)
  }
  export default Strategy
}

declare module 'simple-oauth2' {
  export interface ModuleOptions {
    client: { id: string, secret?: string, idParamName?: string, secretParamName?: string }
    auth: { tokenHost: string, tokenPath?: string, refreshPath?: string, revokePath?: string, authorizeHost?: string, authorizePath?: string }
    options?: { authorizationMethod?: 'header' | 'body', bodyFormat?: 'form' | 'json', scopeSeparator?: string, credentialsEncodingMode?: 'strict' | 'loose' }
  }
  export interface Token {
    access_token: string
    token_type: string
    expires_at: Date
    expires_in?: number
    refresh_token?: string
    id_token?: string
    scope?: string
    [claim: string]: unknown
  }
  type Params = Record<string, string | string[] | undefined>
  export interface AccessToken {
    readonly token: Token
    expired (expirationWindowSeconds?: number): boolean
    refresh (params?: Params): Promise<AccessToken>
    revoke (tokenType: 'access_token' | 'refresh_token'): Promise<unknown>
    revokeAll (): Promise<void>
  }
  export class ClientCredentials {
    constructor (options: ModuleOptions)
    getToken (params: Params): Promise<AccessToken>
  }
  export class AuthorizationCode {
    constructor (options: ModuleOptions)
    authorizeURL (params: Params): string
    getToken (params: Params): Promise<AccessToken>
  }
}
