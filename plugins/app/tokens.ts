import fastifyJwt from '@fastify/jwt'
import { createVerifier } from 'fast-jwt'
import fp from 'fastify-plugin'
import { InvalidTokenError, TokenExpiredError } from '../../src/errors.js'
import { loadSigningKey, type SigningKey } from '../../src/tokens/keys.js'

declare module 'fastify' {
  interface FastifyInstance {
    accessTokens: AccessTokens
  }
}

/** What a verified access token says: whose it is and which session issued it. */
export interface AccessTokenClaims {
  userId: number
  sessionId: string
}

export interface AccessTokens {
  sign (claims: AccessTokenClaims): string
  /** Throws TOKEN_EXPIRED or INVALID_TOKEN (401). `allowExpired` still demands our signature, issuer and audience. */
  verify (token: string, options?: { allowExpired?: boolean }): AccessTokenClaims
  /** The JSON Web Key Set that other services verify our tokens with. */
  readonly jwks: { keys: Array<SigningKey['publicJwk']> }
}

export interface TokensOptions {
  accessTokenTtlSeconds: number
  issuer: string
  audience: string
  privateKeyPem?: string
}

interface AccessTokenPayload {
  sub: string
  sid: string
}

/**
 * Access tokens: asymmetric JWTs (EdDSA by default) signed and verified by
 * @fastify/jwt, with a `kid` naming the key published in the JWKS.
 * Verification is pinned to our algorithm, issuer and audience with no clock
 * leeway, and caches verified tokens (never past their `exp`).
 */
export default fp<TokensOptions>(async (fastify, options) => {
  const key = await loadSigningKey(fastify.store, options.privateKeyPem)

  const verifyOptions = {
    algorithms: [key.algorithm],
    allowedIss: options.issuer,
    allowedAud: options.audience,
    requiredClaims: ['sub', 'sid', 'iat', 'exp', 'iss', 'aud'],
    clockTolerance: 0
  }
  await fastify.register(fastifyJwt, {
    secret: { private: key.privateKeyPem, public: key.publicKeyPem },
    sign: {
      algorithm: key.algorithm,
      kid: key.kid,
      iss: options.issuer,
      aud: options.audience,
      expiresIn: options.accessTokenTtlSeconds // @fastify/jwt reads a number as seconds
    },
    verify: { ...verifyOptions, cache: true }
  })
  // Header-variant refresh accepts an expired access token. Built once: for options other than
  // its defaults, @fastify/jwt would build a new verifier on every call. Its cache of verified
  // tokens spares the EdDSA verification (the dearest step of a refresh) when a token comes back.
  const verifyIgnoringExpiry = createVerifier({ ...verifyOptions, key: key.publicKeyPem, ignoreExpiration: true, cache: true })

  const accessTokens: AccessTokens = {
    sign: ({ userId, sessionId }) => fastify.jwt.sign({ sub: String(userId), sid: sessionId }),
    verify (token, { allowExpired = false } = {}) {
      let payload: AccessTokenPayload
      try {
        payload = allowExpired
          ? verifyIgnoringExpiry(token) as AccessTokenPayload
          : fastify.jwt.verify<AccessTokenPayload>(token)
      } catch (error) {
        if ((error as { code?: string }).code === 'FAST_JWT_EXPIRED') throw new TokenExpiredError()
        throw new InvalidTokenError()
      }
      const userId = Number(payload.sub)
      if (!/^[1-9][0-9]*$/.test(payload.sub) || !Number.isSafeInteger(userId) || typeof payload.sid !== 'string') {
        throw new InvalidTokenError()
      }
      return { userId, sessionId: payload.sid }
    },
    jwks: { keys: [key.publicJwk] }
  }
  fastify.decorate('accessTokens', accessTokens)
}, { name: 'tokens', dependencies: ['store'] })
