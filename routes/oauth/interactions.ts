import { readFileSync } from 'node:fs'
import { Type } from '@sinclair/typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { refuseSignIn } from '../../core/authentication/complete-sign-in.js'
import type { Variant } from '../../core/config.js'
import { FreshSignInRequiredError, InteractionNotFoundError, InteractionStepError } from '../../core/errors.js'
import { SERVICE_SESSION_FIELD } from '../../core/oauth/provider-sessions.js'
import { clientOf } from '../client.js'
import { claimsOf, signedInUser } from '../guards.js'
import { withSignInForms } from '../pages/sign-in-forms.js'

export interface InteractionRoutesOptions {
  apiPrefix: string
  variant: Variant
}

type Details = Awaited<ReturnType<Awaited<ReturnType<FastifyRequest['server']['oauth']['current']>>['interactionDetails']>>

const PAGE = new URL('../pages/public/authorize.html', import.meta.url)
const Uid = Type.Object({ uid: Type.String({ minLength: 1, maxLength: 64 }) })
const Next = Type.Object({ location: Type.String() })

/**
 * The earliest sign-in (seconds since the epoch) the interaction takes, when the app asked for a fresh
 * one: prompt=login wants a sign-in made after the request (the interaction's creation), max_age one
 * within that many seconds (oidc-provider trusts the sign-in it is given and checks neither again).
 */
function freshSignInSince (details: Details, nowSeconds: number): number | undefined {
  const bounds: number[] = []
  if (details.prompt.reasons.includes('login_prompt') && typeof details.iat === 'number') bounds.push(details.iat)
  const maxAge = Number(details.params.max_age)
  if (details.params.max_age !== undefined && Number.isSafeInteger(maxAge)) bounds.push(nowSeconds - maxAge)
  return bounds.length === 0 ? undefined : Math.max(...bounds)
}

/**
 * The sign-in and consent of an app's authorization request, as the service's own page
 * (routes/pages/public/authorize.*): oidc-provider sends the browser to /oauth/interaction/<uid>,
 * the page signs in through the service's API (password, then the second factor; a passkey), and
 * these routes tell the provider who signed in and what they allowed. The interaction is bound to
 * the browser by oidc-provider's cookie (its path is this page's); the sign-in by the service's own
 * access token, as the variant carries it. Registered in the route context of the mount whose API the page
 * calls (routes/oauth/index.ts): no answer is cached, the cookie variant refuses cross-site posts.
 */
const interactionRoutes: FastifyPluginAsyncTypebox<InteractionRoutesOptions> = async (fastify, { apiPrefix, variant }) => {
  const { oauth } = fastify
  const { signedIn } = fastify.routeContext
  const page = withSignInForms(readFileSync(PAGE, 'utf8'), { title: 'Sign in to continue to <span data-field="client"></span>', hidden: true, mailedLink: false })
    .replace('%API%', `${apiPrefix}/`).replace('%VARIANT%', variant)

  async function detailsOf (request: FastifyRequest, reply: FastifyReply): Promise<Details> {
    const provider = await oauth.current()
    try {
      return await provider.interactionDetails(request.raw, reply.raw)
    } catch {
      throw new InteractionNotFoundError()
    }
  }

  async function finish (request: FastifyRequest, reply: FastifyReply, result: Record<string, unknown>, merge = true): Promise<{ location: string }> {
    const provider = await oauth.current()
    try {
      return { location: await provider.interactionResult(request.raw, reply.raw, result, { mergeWithLastSubmission: merge }) }
    } catch {
      throw new InteractionNotFoundError()
    }
  }

  fastify.get('/:uid', { schema: { hide: true, params: Uid } }, async (_request, reply) => {
    reply.type('text/html; charset=utf-8')
    return page
  })

  fastify.get('/:uid/details', {
    schema: {
      hide: true,
      params: Uid,
      response: {
        200: Type.Object({
          prompt: Type.String(),
          client: Type.Object({ id: Type.String(), name: Type.String() }),
          scopes: Type.Array(Type.String()),
          /** The app asked for a fresh sign-in (prompt=login, max_age passed): the page asks for a credential, not for the session it has. */
          freshSignIn: Type.Boolean()
        })
      }
    }
  }, async (request, reply) => {
    const details = await detailsOf(request, reply)
    const clientId = String(details.params.client_id)
    const client = await (await oauth.current()).Client.find(clientId)
    return {
      prompt: details.prompt.name,
      client: { id: clientId, name: client?.clientName ?? clientId },
      scopes: String(details.params.scope ?? 'openid').split(' ').filter(scope => scope !== ''),
      freshSignIn: details.prompt.name === 'login' && (details.prompt.reasons.includes('login_prompt') || details.prompt.reasons.includes('max_age'))
    }
  })

  // Signed in through the service's API (the variant's access token): the interaction's account is that user,
  // signed in when the session last proved a credential (auth_time, max_age), and the provider's browser
  // session is bound to this service session (it ends when this one does: core/oauth/provider-sessions.ts).
  // The sign-in itself was finished by completeSignIn (core/authentication/complete-sign-in.ts), which started that session.
  fastify.post('/:uid/login', { schema: { hide: true, params: Uid, response: { 200: Next } }, onRequest: signedIn }, async (request, reply) => {
    const details = await detailsOf(request, reply)
    if (details.prompt.name !== 'login') throw new InteractionStepError('This step of the sign-in is not a sign-in')
    // Disabling revoked the user's sessions (the guard refuses them); an instance that has not yet followed the log still reads this.
    // completeSignIn's refusal, without the address: it was judged when the session signed in.
    const user = await signedInUser(fastify.store, request)
    refuseSignIn(user, false)
    const { sessionId } = claimsOf(request)
    const authenticatedAt = Math.floor((await fastify.sessions.authenticatedAt(sessionId)).getTime() / 1000)
    const since = freshSignInSince(details, Math.floor(fastify.clock.now() / 1000))
    if (since !== undefined && authenticatedAt < since) throw new FreshSignInRequiredError()
    return await finish(request, reply, { login: { accountId: String(user.id), ts: authenticatedAt }, [SERVICE_SESSION_FIELD]: sessionId })
  })

  fastify.post('/:uid/consent', {
    schema: { hide: true, params: Uid, body: Type.Object({ allow: Type.Boolean() }), response: { 200: Next } }
  }, async (request, reply) => {
    const details = await detailsOf(request, reply)
    if (details.prompt.name !== 'consent') throw new InteractionStepError('This step of the sign-in is not a consent')
    const clientId = String(details.params.client_id)
    const accountId = details.session?.accountId
    if (accountId === undefined) throw new InteractionNotFoundError()
    if (!request.body.allow) {
      return await finish(request, reply, { error: 'access_denied', error_description: 'The user did not allow the app' }, false)
    }
    const provider = await oauth.current()
    const grant = details.grantId === undefined
      ? new provider.Grant({ accountId, clientId })
      : await provider.Grant.find(details.grantId) ?? new provider.Grant({ accountId, clientId })
    const missing = details.prompt.details as { missingOIDCScope?: string[], missingOIDCClaims?: string[], missingResourceScopes?: Record<string, string[]> }
    if (missing.missingOIDCScope !== undefined) grant.addOIDCScope(missing.missingOIDCScope.join(' '))
    if (missing.missingOIDCClaims !== undefined) grant.addOIDCClaims(missing.missingOIDCClaims)
    for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {})) grant.addResourceScope(resource, scopes.join(' '))
    const grantId = await grant.save()
    await fastify.securityEvents.record('oauth_consent_granted', clientOf(request), {
      userId: Number(accountId),
      detail: { client_id: clientId, scope: String(details.params.scope ?? '') }
    })
    return await finish(request, reply, { consent: { grantId } })
  })
}

export default interactionRoutes
