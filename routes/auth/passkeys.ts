import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { AuthenticationResponseJSON, AuthenticatorAttachment, RegistrationResponseJSON } from '@simplewebauthn/server'
import { Type, type Static } from '@sinclair/typebox'
import { LoginResponse, type LoginResponseBody } from '../../core/schemas/auth.js'
import { errorResponses } from '../../core/schemas/errors.js'
import {
  AuthenticationCredentialBody, CreationOptionsResponse, PasskeyCreated, PasskeyParams, PasskeysResponse, PasskeyView,
  RegistrationCredentialBody, RenamePasskeyBody, RequestOptionsResponse, presentPasskey
} from '../../core/schemas/passkeys.js'
import { presentUser } from '../../core/schemas/users.js'
import { clientOf } from '../client.js'
import { claimsOf, signedInUser } from '../guards.js'
import { limitEach, perAddress, perUser } from '../rate-limits.js'
import { NO_CREDENTIALS } from '../transport.js'

const FRESH = 'Needs a fresh session: a sign-in or re-authentication within REAUTH_MAX_AGE (login, POST /auth/reauthenticate, ' +
  'POST /auth/passkeys/reauthenticate, or a passkey login), else 403 REAUTHENTICATION_REQUIRED.'

/**
 * What the browser sent, as @simplewebauthn types it: an authenticatorAttachment it does not name (null, a
 * newer one) and a null userHandle read as none. Neither the library nor the rules tell them apart.
 */
const attachmentOf = (sent: string | null | undefined): AuthenticatorAttachment | undefined =>
  sent === 'platform' || sent === 'cross-platform' ? sent : undefined

function registrationResponse (credential: Omit<Static<typeof RegistrationCredentialBody>, 'name'>): RegistrationResponseJSON {
  return { ...credential, authenticatorAttachment: attachmentOf(credential.authenticatorAttachment), clientExtensionResults: credential.clientExtensionResults ?? {} }
}

function authenticationResponse (credential: Static<typeof AuthenticationCredentialBody>): AuthenticationResponseJSON {
  return {
    ...credential,
    authenticatorAttachment: attachmentOf(credential.authenticatorAttachment),
    clientExtensionResults: credential.clientExtensionResults ?? {},
    response: { ...credential.response, userHandle: credential.response.userHandle ?? undefined }
  }
}

/**
 * Passkeys: adding, listing, renaming and removing one's own (signed in), and logging in with
 * one (no session). HTTP only; the rules are core/passkeys/passkeys.ts.
 */
const passkeyRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  const { variant, transport, rateLimit, signedIn } = fastify.routeContext
  const { store, passkeys } = fastify
  // Per client address, as many as logins (RATE_LIMIT_LOGIN_MAX): a passkey login is a login.
  const perAddressAsLogins = (name: string) => perAddress(name, rateLimit.loginMax)

  // One's own passkeys: each route needs a signed-in session.
  fastify.post('/passkeys/registration-options', {
    schema: {
      security: transport.security.access,
      summary: 'Options to create a passkey (navigator.credentials.create)',
      description: `A discoverable credential, user verification required, the user's passkeys excluded; the challenge is good for one registration within 5 minutes. ${FRESH}`,
      response: { 200: CreationOptionsResponse, ...errorResponses(400, 401, 403, 404, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: limitEach(fastify, rateLimit, [perUser('passkey-registration-options', rateLimit)])
  }, async (request) => {
    return await passkeys.registrationOptions(await signedInUser(store, request), claimsOf(request).sessionId)
  })

  fastify.post('/passkeys', {
    schema: {
      security: transport.security.access,
      summary: 'Add a passkey: the browser\'s credential.toJSON() after navigator.credentials.create()',
      description: 'The challenge must be one this user was given by /auth/passkeys/registration-options, unused and under 5 minutes old (400 INVALID_PASSKEY_REGISTRATION otherwise). A credential already registered is 409 PASSKEY_ALREADY_REGISTERED.',
      body: RegistrationCredentialBody,
      response: { 201: PasskeyCreated, ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: limitEach(fastify, rateLimit, [perUser('passkey-registration', rateLimit)])
  }, async (request, reply) => {
    const { name, ...credential } = request.body
    const user = await signedInUser(store, request)
    const passkey = await passkeys.register(user, registrationResponse(credential), name?.trim(), clientOf(request), claimsOf(request).sessionId)
    const { last_used_at: _lastUsedAt, ...created } = presentPasskey(passkey)
    return reply.code(201).send(created)
  })

  fastify.get('/passkeys', {
    schema: {
      security: transport.security.access,
      summary: 'The signed-in user\'s passkeys, oldest first',
      response: { 200: PasskeysResponse, ...errorResponses(401, 404, 500, 503) }
    },
    onRequest: signedIn
  }, async (request) => {
    return { passkeys: (await passkeys.list(claimsOf(request).userId)).map(presentPasskey) }
  })

  fastify.patch('/passkeys/:id', {
    schema: {
      security: transport.security.access,
      summary: 'Rename one of one\'s passkeys; answers the passkey',
      description: 'Another user\'s passkey is 404 PASSKEY_NOT_FOUND, as one that never was.',
      params: PasskeyParams,
      body: RenamePasskeyBody,
      response: { 200: PasskeyView, ...errorResponses(400, 401, 403, 404, 413, 415, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: limitEach(fastify, rateLimit, [perUser('passkey-rename', rateLimit)])
  }, async (request) => {
    return presentPasskey(await passkeys.rename(claimsOf(request).userId, request.params.id, request.body.name.trim()))
  })

  fastify.delete('/passkeys/:id', {
    schema: {
      security: transport.security.access,
      summary: 'Remove one of one\'s passkeys',
      description: `Another user's passkey is 404 PASSKEY_NOT_FOUND. ${FRESH}`,
      params: PasskeyParams,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: limitEach(fastify, rateLimit, [perUser('passkey-removal', rateLimit)])
  }, async (request, reply) => {
    const claims = claimsOf(request)
    await passkeys.remove(claims.userId, request.params.id, clientOf(request), claims.sessionId)
    return reply.code(204).send(null)
  })

  fastify.post('/passkeys/reauthenticate', {
    schema: {
      security: transport.security.access,
      summary: 'Re-authenticate with a passkey: the session may make sensitive changes for REAUTH_MAX_AGE',
      description: 'The browser\'s credential.toJSON() after navigator.credentials.get() with options from ' +
        '/auth/passkeys/authentication-options. The passkey must be the signed-in user\'s, with user verification ' +
        '(it stands for both factors, as a passkey login does): for accounts without a password, or in place of ' +
        'password and code. 401 INVALID_PASSKEY otherwise (another user\'s passkey too); 401 PASSKEY_COUNTER_REGRESSED.',
      body: AuthenticationCredentialBody,
      response: { 204: Type.Null(), ...errorResponses(400, 401, 403, 404, 413, 415, 429, 500, 503) }
    },
    onRequest: signedIn,
    preHandler: limitEach(fastify, rateLimit, [perUser('passkey-reauthenticate', rateLimit), perAddressAsLogins('passkey-reauthenticate')])
  }, async (request, reply) => {
    await passkeys.reauthenticate(await signedInUser(store, request), authenticationResponse(request.body), clientOf(request), claimsOf(request).sessionId)
    return reply.code(204).send(null)
  })

  fastify.post('/passkeys/authentication-options', {
    schema: {
      security: NO_CREDENTIALS,
      summary: 'Options to log in with a passkey (navigator.credentials.get), no session needed',
      description: 'For discoverable credentials: allowCredentials is empty and the authenticator offers the passkeys it holds for this site. User verification is required. The challenge is good for one login within 5 minutes.',
      response: { 200: RequestOptionsResponse, ...errorResponses(400, 403, 429, 500, 503) }
    },
    preHandler: limitEach(fastify, rateLimit, [perAddressAsLogins('passkey-authentication-options')])
  }, async () => await passkeys.authenticationOptions())

  fastify.post('/passkeys/login', {
    schema: {
      security: NO_CREDENTIALS,
      summary: 'Log in with a passkey: the browser\'s credential.toJSON() after navigator.credentials.get()',
      description: 'Answers as POST /auth/login does. A passkey with user verification is a whole login (no second factor after it). ' +
        '401 INVALID_PASSKEY: unknown passkey, unknown, used or expired challenge, no user verification, or a bad signature. ' +
        '401 PASSKEY_COUNTER_REGRESSED: the signature counter went back (a cloned authenticator?); recorded as a security event.',
      body: AuthenticationCredentialBody,
      response: { 200: LoginResponse[variant], ...errorResponses(400, 401, 403, 413, 415, 429, 500, 503) }
    },
    preHandler: limitEach(fastify, rateLimit, [perAddressAsLogins('passkey-login')]),
    config: { metric: 'login' }
  }, async (request, reply) => {
    const { user, session: tokens } = await passkeys.logIn(authenticationResponse(request.body), clientOf(request))
    transport.deliver(reply, tokens)
    return { user: presentUser(user, variant), ...transport.loginTokens(tokens) } as LoginResponseBody
  })
}

export default passkeyRoutes
