import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type Static } from '@sinclair/typebox'
import type { FastifyReply } from 'fastify'
import { accountRefusal } from '../../core/authentication/complete-sign-in.js'
import { SignInRefusedError } from '../../core/identities/identities.js'
import { InvalidOidcStateError, InvalidRedirectError, mfaRequired } from '../../core/errors.js'
import { landingPage } from '../../core/oidc/landing-page.js'
import { redirectTarget } from '../../core/oidc/redirect-target.js'
import { STATE_COOKIE, STATE_TTL_SECONDS, stateCookie as stateCookieOf } from '../../core/oidc/state-cookie.js'
import { LoginResponse } from '../../core/schemas/auth.js'
import { errorResponses } from '../../core/schemas/errors.js'
import { LoginRefusedResponse } from '../../core/schemas/mfa.js'
import { CallbackQuery, ExchangeBody, HeaderSignInQuery, IdentitiesResponse, ProviderParams, ProvidersResponse, SignInQuery } from '../../core/schemas/oidc.js'
import { presentUser } from '../../core/schemas/users.js'
import { isEmail } from '../../core/validation.js'
import { clientOf } from '../client.js'
import { claimsOf, signedInUser } from '../guards.js'
import { limitEach, perAddress, perUser } from '../rate-limits.js'
import { NO_CREDENTIALS } from '../transport.js'

/** Where the browser goes after a sign-in without redirect_to: the account console. */
const DEFAULT_REDIRECT = '/account'
/** A provider's error code as sent back in #error=: RFC 6749 codes are [a-z_]; anything else is cut to that. */
const errorCode = (value: string) => value.replace(/[^a-z_]/g, '').slice(0, 64) || 'server_error'

/**
 * Sign-in with an OpenID Connect provider (issue 17), and the identities a user has linked.
 * Cookie variant: the callback sets the session cookies and moves on through a page of ours (the
 * same-site step). Header variant: the callback sends `#code=` to redirect_to, and
 * POST /auth/oidc/exchange turns it into the login answer.
 */
const oidcRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { variant, transport, mountPrefix, config, signedIn } = fastify.routeContext
  const { oidc, identities, authentication, store } = fastify
  const publicUrl = config.mail.publicUrl
  const callbackPath = (provider: string) => `${mountPrefix}/auth/oidc/${provider}/callback`
  const stateCookie = (provider: string) => stateCookieOf(mountPrefix, provider, config.cookieSecure)
  // Per client address, as many as logins (RATE_LIMIT_LOGIN_MAX), counted before anything else is read.
  const perAddressLimit = (name: string) => limitEach(fastify, config.rateLimit, [perAddress(name, config.rateLimit.loginMax)])
  /** The browser back at the sign-in's target with our fragment (a code, an error). */
  const sendBack = (reply: FastifyReply, target: string, fragment: Record<string, string>) =>
    reply.redirect(`${target}#${new URLSearchParams(fragment).toString()}`, 303)

  fastify.get('/oidc/providers', {
    schema: {
      security: NO_CREDENTIALS,
      summary: 'The providers one can sign in with, for the "Sign in with <label>" buttons',
      response: { 200: ProvidersResponse, ...errorResponses(500) }
    }
  }, async () => ({ providers: oidc.providers() }))

  // The query's type is the union of the two variants' (the type provider would keep only what they share): the
  // handler then reads the header variant's challenge by narrowing, and the schema given validates the variant's.
  fastify.get<{ Params: Static<typeof ProviderParams>, Querystring: Static<typeof HeaderSignInQuery> | Static<typeof SignInQuery> }>('/oidc/:provider', {
    schema: {
      security: NO_CREDENTIALS,
      summary: 'Start signing in with a provider: redirects the browser to it',
      description: `Authorization code flow with PKCE (S256), state and nonce, bound to this browser by a sealed, HttpOnly, SameSite=Lax cookie (__Host-${STATE_COOKIE}.<provider>; without the prefix when COOKIE_SECURE=false), for ${STATE_TTL_SECONDS} seconds. redirect_to must be a path of ours or a URL under ALLOWED_ORIGINS, else 400 INVALID_REDIRECT.` +
        (variant === 'header' ? ' code_challenge is required (S256): the #code= the sign-in ends with is exchanged only with its code_verifier.' : ''),
      params: ProviderParams,
      querystring: variant === 'header' ? HeaderSignInQuery : SignInQuery,
      response: { 302: Type.Null({ description: 'To the provider\'s authorization endpoint' }), ...errorResponses(400, 404, 429, 500, 503) }
    },
    onRequest: perAddressLimit('oidc-start')
  }, async (request, reply) => {
    const { provider } = request.params
    oidc.assertServed(provider)
    const redirectTo = redirectTarget(request.query.redirect_to ?? DEFAULT_REDIRECT, config.allowedOrigins)
    if (redirectTo === undefined) throw new InvalidRedirectError()
    // The header variant's schema requires the challenge (HeaderSignInQuery); the cookie variant's takes none.
    const codeChallenge = variant === 'header' && 'code_challenge' in request.query ? request.query.code_challenge : undefined
    const { authorizationUrl, cookie } = await oidc.begin(provider, publicUrl + callbackPath(provider), redirectTo, codeChallenge)
    reply.setCookie(stateCookie(provider).name, cookie, { ...stateCookie(provider).options, maxAge: STATE_TTL_SECONDS })
    return reply.redirect(authorizationUrl.href, 302)
  })

  fastify.get('/oidc/:provider/callback', {
    schema: {
      security: NO_CREDENTIALS,
      summary: 'Where the provider sends the browser back (register this URL at the provider)',
      description: 'A missing, forged or expired state is 400 INVALID_STATE and sets nothing. Otherwise the browser goes back to redirect_to: with #error=<code> when the provider refused or its answer failed a check, ' +
        'or the sign-in was refused: email_required (no email given), invalid_email (the email the provider gave is not one address as registration takes it), email_not_verified (the provider did not verify the email: it neither makes an account nor opens one), ' +
        'identity_conflict (the account with that email has another identity at this provider; nothing is changed). ' +
        'A verified email opens the account that holds it; one whose address was never verified is claimed first: its password, passkeys, TOTP, ' +
        'recovery codes, other identities and sessions are gone; a verified one that a provider has not signed in to before loses its password, ' +
        'passkeys and sessions (app grants with them): the one signing in showed the address, not those (docs/accounts.md). ' +
        (variant === 'cookie'
          ? 'signed in, through a page of ours (200 text/html) that moves on by itself, so that the SameSite=Strict session cookies are sent on arrival.'
          : 'with a one-time #code= (60 s) for POST /auth/oidc/exchange, bound to the start\'s code_challenge.'),
      params: ProviderParams,
      querystring: CallbackQuery,
      response: {
        200: Type.String({ description: 'text/html: the same-site step (cookie variant)' }),
        303: Type.Null({ description: 'Back to redirect_to with #code= or #error=' }),
        ...errorResponses(400, 404, 429, 500, 503)
      }
    },
    onRequest: perAddressLimit('oidc-callback'),
    config: { metric: 'login' }
  }, async (request, reply) => {
    const { provider } = request.params
    const pending = oidc.pending(provider, request.cookies[stateCookie(provider).name], request.query.state)
    // One use: the checks it holds are spent whatever happens next.
    reply.clearCookie(stateCookie(provider).name, stateCookie(provider).options)
    if (request.query.error !== undefined) return sendBack(reply, pending.redirectTo, { error: errorCode(request.query.error) })

    let claims
    try {
      const callbackUrl = new URL(publicUrl + callbackPath(provider))
      callbackUrl.search = new URL(request.url, 'http://callback').search
      claims = await oidc.complete(provider, callbackUrl, pending)
    } catch (error) {
      // The provider's answer failed a check (code exchange, ID token) or the provider is unreachable: back to the page.
      request.log.warn({ err: error, provider }, 'provider sign-in failed')
      return sendBack(reply, pending.redirectTo, { error: 'invalid_response' })
    }
    // The same rule as registration's: a claim such as "Win <mallory@evil.test>, victim@example.com" would
    // become the account's address, and its mail would go to every address in it.
    if (claims.email !== undefined && !isEmail(claims.email)) {
      request.log.warn({ provider }, 'provider sign-in refused: the email claim is not an address')
      return sendBack(reply, pending.redirectTo, { error: 'invalid_email' })
    }
    const client = clientOf(request)
    let user
    try {
      user = await identities.accountFor(provider, claims, variant, client)
    } catch (error) {
      // The store's troubles (503) and our faults (500) answer as everywhere else.
      if (!(error instanceof SignInRefusedError)) throw error
      return sendBack(reply, pending.redirectTo, { error: error.reason })
    }

    // Before a code is handed out, the refusals completeSignIn would answer (403 ACCOUNT_DISABLED, EMAIL_NOT_VERIFIED) as
    // #error=account_disabled, #error=email_not_verified: an address neither the provider nor a mailed link verified does not sign in.
    const refusal = accountRefusal(user, config.requireEmailVerification)
    if (refusal !== undefined) return sendBack(reply, pending.redirectTo, { error: refusal })
    if (variant === 'header') {
      // A state another mount (the cookie variant's) started carries no challenge: no code can be bound to it.
      if (pending.codeChallenge === undefined) throw new InvalidOidcStateError()
      return sendBack(reply, pending.redirectTo, { code: await identities.issueLoginCode(user, provider, pending.codeChallenge) })
    }
    const outcome = await authentication.completeSignIn({ user, method: { kind: 'provider', provider }, client })
    // TOTP on: no cookie yet; the page asks for the code and sends it with the mfa_token to POST /auth/mfa/verify.
    if (outcome.kind === 'second_factor') return sendBack(reply, pending.redirectTo, { mfa_token: outcome.mfaToken })
    transport.deliver(reply, outcome.session)
    return reply.type('text/html; charset=utf-8').send(landingPage(pending.redirectTo))
  })

  if (variant === 'header') {
    fastify.post('/oidc/exchange', {
      schema: {
        security: NO_CREDENTIALS,
        summary: 'Trade the one-time #code= of a provider sign-in for the login answer',
        description: 'The code is single use and lives 60 seconds: a used, unknown or expired one is 400 INVALID_CODE. ' +
          'It is worth a sign-in only with the code_verifier of the code_challenge the sign-in was started with: without it, or with another, ' +
          'the answer is 400 INVALID_CODE and the code is spent. ' +
          'An account with TOTP gets 403 MFA_REQUIRED with an `mfa_token` for POST /auth/mfa/verify.',
        body: ExchangeBody,
        response: { 200: LoginResponse.header, ...errorResponses(400, 413, 415, 429, 500, 503), 403: LoginRefusedResponse }
      },
      onRequest: perAddressLimit('oidc-exchange'),
      config: { metric: 'login' }
    }, async (request) => {
      const { user, provider } = await identities.redeemLoginCode(request.body.code, request.body.code_verifier)
      const outcome = await authentication.completeSignIn({ user, method: { kind: 'provider', provider }, client: clientOf(request) })
      if (outcome.kind === 'second_factor') throw mfaRequired(outcome.mfaToken)
      const { accessToken, refreshToken } = outcome.session
      return { user: presentUser(user, 'header'), accessToken, refreshToken }
    })
  }

  // One's own linked identities: each route needs a signed-in session.
  fastify.get('/identities', {
    schema: {
      security: transport.security.access,
      summary: 'The provider identities linked to the signed-in user',
      response: { 200: IdentitiesResponse, ...errorResponses(401, 500, 503) }
    },
    onRequest: signedIn
  }, async (request) => {
    const linked = await identities.list(claimsOf(request).userId)
    return { identities: linked.map(identity => ({ provider: identity.provider, email: identity.email, created_at: identity.createdAt.toISOString() })) }
  })

  fastify.delete('/identities/:provider', {
    schema: {
      security: transport.security.access,
      summary: 'Unlink a provider identity (needs a recent sign-in)',
      description: '409 LAST_LOGIN_METHOD when no password and no other identity would be left to sign in with.',
      params: ProviderParams,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 409, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: limitEach(fastify, config.rateLimit, [perUser('unlink-identity', config.rateLimit)])
  }, async (request, reply) => {
    const user = await signedInUser(store, request)
    const { provider } = request.params
    await identities.unlink({ user, sessionId: claimsOf(request).sessionId, client: clientOf(request) }, provider)
    return reply.code(204).send(null)
  })
}

export default oidcRoutes
