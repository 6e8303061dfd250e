import { Type, type Static } from '@sinclair/typebox'
import type { Variant } from '../config.js'
import { Email, Name, NO_NUL, Password, Token, Username } from './common.js'
import { CookieVariantUser, HeaderVariantUser } from './users.js'

const HeaderVariantRegisterBody = Type.Object({
  first_name: Name,
  last_name: Name,
  email: Email,
  password: Password
}, { additionalProperties: false })

const CookieVariantRegisterBody = Type.Object({
  first_name: Name,
  last_name: Name,
  username: Username,
  email: Email,
  password: Password
}, { additionalProperties: false })

export const RegisterBody = { header: HeaderVariantRegisterBody, cookie: CookieVariantRegisterBody } as const satisfies Record<Variant, unknown>

export const LoginBody = Type.Object({
  email: Type.String({ minLength: 1, maxLength: 254, pattern: NO_NUL }),
  password: Type.String({ minLength: 1, maxLength: 1024 })
}, { additionalProperties: false })

/** Header variant: both tokens in the body. Cookie variant: the refresh token travels only as an HttpOnly cookie. */
export const LoginResponse = {
  header: Type.Object({ user: HeaderVariantUser, accessToken: Token, refreshToken: Token }),
  cookie: Type.Object({ user: CookieVariantUser, accessToken: Token })
} as const satisfies Record<Variant, unknown>

export type LoginResponseBody = Static<typeof LoginResponse.header> | Static<typeof LoginResponse.cookie>

export const AccessTokenResponse = Type.Object({ accessToken: Token })

/** One public signing key as RFC 7517 writes it: an Ed25519 or P-256 key (crv, x, y), or an RSA key (n, e). */
export const PublicJwk = Type.Object({
  kty: Type.String(),
  crv: Type.Optional(Type.String()),
  x: Type.Optional(Type.String()),
  y: Type.Optional(Type.String()),
  n: Type.Optional(Type.String()),
  e: Type.Optional(Type.String()),
  kid: Type.String(),
  alg: Type.Union([Type.Literal('EdDSA'), Type.Literal('ES256'), Type.Literal('RS256')]),
  use: Type.Literal('sig')
})
export type PublicJwkType = Static<typeof PublicJwk>

export const JwksResponse = Type.Object({ keys: Type.Array(PublicJwk) })
