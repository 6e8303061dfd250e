import type { CookieSerializeOptions } from '@fastify/cookie'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { IssuedTokens } from '../core/sessions/sessions.js'
import type { Variant } from '../core/config.js'

/**
 * How tokens travel in one variant of the interface: the one place that knows
 * headers from cookies. The routes plugin picks the transport of its variant.
 */
export interface TokenTransport {
  readAccessToken (request: FastifyRequest): string | undefined
  /**
   * The access token as sent, unchecked (Bearer's token68 syntax is not tested): only to look up a
   * token verified before, whose text is a good token's. Anything else goes through readAccessToken.
   */
  accessTokenAsSent (request: FastifyRequest): string | undefined
  readRefreshToken (request: FastifyRequest): string | undefined
  /** How the access token is expected, for the 401 message when it is missing. */
  readonly accessTokenHint: string
  readonly refreshTokenHint: string
  /** Header variant: the refresh token never rotates, and refresh also demands the (possibly expired) access token of the same user. */
  readonly refreshPolicy: { rotate: boolean, bindAccessToken: boolean }
  /** Hands issued tokens to the client outside the body (cookies), where the variant does so. */
  deliver (reply: FastifyReply, tokens: IssuedTokens): void
  /** The token fields of the login body. */
  loginTokens (tokens: Required<IssuedTokens>): { accessToken: string, refreshToken?: string }
  /** Takes the tokens away from the client at logout, where the variant holds them. */
  clear (reply: FastifyReply): void
  /** The OpenAPI `security` of the variant's routes, so generated clients know what to send. */
  readonly security: {
    /** Routes guarded by requireAccessToken. */
    access: SecurityRequirements
    /** Refresh: the refresh token (variant A: with the access token, possibly expired). */
    refresh: SecurityRequirements
    /** Logout: the refresh token when the client has one; without it, 204 all the same. */
    optionalRefresh: SecurityRequirements
  }
}

/** An operation's OpenAPI `security`: any one of the objects, each naming schemes all needed together (plugins/external/swagger.ts). */
export type SecurityRequirements = ReadonlyArray<Record<string, readonly string[]>>

/** The `security` of routes that take no token (register, login, the mailed-link routes). */
export const NO_CREDENTIALS: SecurityRequirements = []

export const ACCESS_TOKEN_COOKIE = 'accessToken'
export const REFRESH_TOKEN_COOKIE = 'refreshToken'

export interface CookieSettings {
  /** The prefix the variant is mounted under ('' for none): cookie paths follow it. */
  prefix: string
  secure: boolean
  accessTokenTtlSeconds: number
  refreshTokenTtlSeconds: number
}

export function transportFor (variant: Variant, cookies: CookieSettings): TokenTransport {
  return variant === 'header' ? headerTransport : cookieTransport(cookies)
}

/** `Bearer <token>`, the scheme case-insensitive (RFC 6750); anything else reads as no token. */
function bearerToken (header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined
  const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header)
  return match?.[1]
}

/** Variant A: `Authorization: Bearer <access>` and `X-Refresh-Token: Bearer <refresh>`; both tokens in the login body. */
const headerTransport: TokenTransport = {
  readAccessToken: (request) => bearerToken(request.headers.authorization),
  accessTokenAsSent (request) {
    const header = request.headers.authorization
    return header?.startsWith('Bearer ') === true ? header.slice(7) : undefined
  },
  readRefreshToken: (request) => bearerToken(request.headers['x-refresh-token']),
  accessTokenHint: 'Send the access token as Authorization: Bearer <token>',
  refreshTokenHint: 'Send the refresh token as X-Refresh-Token: Bearer <token>',
  refreshPolicy: { rotate: false, bindAccessToken: true },
  deliver () {},
  loginTokens: ({ accessToken, refreshToken }) => ({ accessToken, refreshToken }),
  clear () {},
  security: {
    access: [{ bearerAuth: [] }],
    refresh: [{ bearerAuth: [], refreshTokenHeader: [] }],
    optionalRefresh: [{ refreshTokenHeader: [] }, {}]
  }
}

const COOKIE_SECURITY: TokenTransport['security'] = {
  access: [{ accessTokenCookie: [] }],
  refresh: [{ refreshTokenCookie: [] }],
  optionalRefresh: [{ refreshTokenCookie: [] }, {}]
}

/**
 * Variant B: HttpOnly cookies that page script cannot read. SameSite=Strict, and
 * the refresh cookie goes only to the auth routes, the narrowest path that holds
 * refresh and logout.
 */
function cookieTransport (settings: CookieSettings): TokenTransport {
  const base: CookieSerializeOptions = { httpOnly: true, secure: settings.secure, sameSite: 'strict' }
  const accessCookie = { ...base, path: settings.prefix === '' ? '/' : settings.prefix }
  const refreshCookie = { ...base, path: `${settings.prefix}/auth` }
  const readCookie = (request: FastifyRequest, name: string) => {
    const value = request.cookies[name]
    return value === undefined || value === '' ? undefined : value
  }
  return {
    readAccessToken: (request) => readCookie(request, ACCESS_TOKEN_COOKIE),
    accessTokenAsSent: (request) => readCookie(request, ACCESS_TOKEN_COOKIE),
    readRefreshToken: (request) => readCookie(request, REFRESH_TOKEN_COOKIE),
    accessTokenHint: `Send the access token in the ${ACCESS_TOKEN_COOKIE} cookie`,
    refreshTokenHint: `Send the refresh token in the ${REFRESH_TOKEN_COOKIE} cookie`,
    refreshPolicy: { rotate: true, bindAccessToken: false },
    deliver (reply, { accessToken, refreshToken, refreshTokenMaxAge }) {
      reply.setCookie(ACCESS_TOKEN_COOKIE, accessToken, { ...accessCookie, maxAge: settings.accessTokenTtlSeconds })
      if (refreshToken !== undefined) {
        // The token's own lifetime, which the session's absolute end (SESSION_MAX_AGE) may shorten.
        reply.setCookie(REFRESH_TOKEN_COOKIE, refreshToken, { ...refreshCookie, maxAge: refreshTokenMaxAge ?? settings.refreshTokenTtlSeconds })
      }
    },
    loginTokens: ({ accessToken }) => ({ accessToken }),
    clear (reply) {
      reply.clearCookie(ACCESS_TOKEN_COOKIE, accessCookie)
      reply.clearCookie(REFRESH_TOKEN_COOKIE, refreshCookie)
    },
    security: COOKIE_SECURITY
  }
}
