import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { EmailCodeRegistration } from '../../core/accounts/email-code-sign-in.js'
import type { Variant } from '../../core/config.js'
import { AcceptedResponse } from '../../core/schemas/account.js'
import { LoginResponse } from '../../core/schemas/auth.js'
import { EmailCodeBody, EmailCodeVerifyBody, SIGN_UP_FIELDS } from '../../core/schemas/email-code.js'
import { errorResponses } from '../../core/schemas/errors.js'
import { LoginRefusedResponse } from '../../core/schemas/mfa.js'
import { clientOf } from '../client.js'
import { limitEach, perAddress } from '../rate-limits.js'
import { NO_CREDENTIALS } from '../transport.js'
import { answerLogin } from './login-answer.js'

/** The one answer of POST /auth/email-code, for every well-formed address: known, unknown, or past its quota. */
export const EMAIL_CODE_ANSWER = { message: 'If that address can sign in here, a code is on its way; it works for 10 minutes' }

export interface EmailCodeRoutesOptions {
  /** EMAIL_CODE_SIGNUP: an address without an account is mailed a code too, to sign up without a password. */
  signUp: boolean
}

/** The validated body's address (both routes' schemas require one). */
function emailOf (body: unknown): string | undefined {
  return typeof body === 'object' && body !== null && 'email' in body && typeof body.email === 'string' ? body.email : undefined
}

/** What a verify's body brings for a sign-up: the variant's fields, or the names of those it lacks (none while EMAIL_CODE_SIGNUP is off). */
function registrationOf (variant: Variant, signUp: boolean, body: { first_name?: string, last_name?: string, username?: string }): EmailCodeRegistration {
  if (!signUp) return { closed: true }
  const missing = SIGN_UP_FIELDS[variant].filter(field => body[field] === undefined)
  if (missing.length > 0 || body.first_name === undefined || body.last_name === undefined) return { missing }
  return { fields: { firstName: body.first_name, lastName: body.last_name, username: variant === 'cookie' ? body.username ?? null : null } }
}

/** Sign in (or up) without a password: a six-digit code mailed to the address (EMAIL_CODE_LOGIN; off, neither route exists). */
const emailCodeRoutes: FastifyPluginAsyncTypebox<EmailCodeRoutesOptions> = async (fastify, { signUp }) => {
  const { variant, transport, rateLimit } = fastify.routeContext
  const { account, emailCodes } = fastify

  // One set of counters for both routes: asking for codes and trying them (wrong ones included) spend the same limits,
  // per client address and per address typed, known or not, as forgot-password's.
  // (Keyed by the body's email, which both routes' schemas require: read as `unknown`, the hooks fit both routes.)
  const limits = limitEach(fastify, rateLimit, [
    perAddress('email-code', rateLimit.recoveryMax),
    { name: 'email-code:account', max: rateLimit.recoveryAccountMax, key: (request) => emailOf(request.body) }
  ])

  fastify.post('/email-code', {
    schema: {
      summary: 'Mail a six-digit sign-in code; the same 202 whether or not the address is known',
      description: 'A known address (and, with EMAIL_CODE_SIGNUP, an unknown one) is mailed a code and a link to the sign-in page ' +
        'that fills it in: single use, 10 minutes, only the newest code works, five wrong tries burn it. The mail goes out a moment ' +
        'after the answer, whatever the address, so neither the answer nor its time tells whether the address has an account. ' +
        'Send the code to POST /auth/email-code/verify, or (signed in) to POST /auth/reauthenticate as `email_code`.',
      security: NO_CREDENTIALS,
      body: EmailCodeBody,
      response: { 202: AcceptedResponse, ...errorResponses(400, 403, 413, 415, 429, 500, 503) }
    },
    preHandler: limits
  }, async (request, reply) => {
    emailCodes.send(request.body.email, { signUp })
    return reply.code(202).send(EMAIL_CODE_ANSWER)
  })

  fastify.post('/email-code/verify', {
    schema: {
      summary: 'Sign in with a mailed code; with the registration fields, sign up without a password',
      description: 'Answers as POST /auth/login does: 200 with the tokens (cookies in the cookie variant), or 403 MFA_REQUIRED with an ' +
        '`mfa_token` for an account with TOTP. A wrong, expired, used, replaced or burnt code is 401 INVALID_CODE. The code proves the ' +
        'address: an account whose address was never verified is verified, and loses what its registrant set up (password, passkeys, ' +
        'TOTP, other providers, sessions). For an address without an account, the registration fields (first_name, last_name; ' +
        'username in the cookie variant; never a password) make one with no password: 201 and the login answer; without them 400 ' +
        'naming the missing fields, and the code stays good.',
      security: NO_CREDENTIALS,
      body: EmailCodeVerifyBody[variant],
      response: {
        200: LoginResponse[variant],
        201: LoginResponse[variant],
        ...errorResponses(400, 401, 409, 413, 415, 429, 500, 503),
        403: LoginRefusedResponse
      }
    },
    preHandler: limits,
    config: { metric: 'login' }
  }, async (request, reply) => {
    const { body } = request
    const { created, ...signedIn } = await account.signInWithEmailCode(body.email, body.code, registrationOf(variant, signUp, body), clientOf(request))
    return reply.code(created ? 201 : 200).send(answerLogin(reply, transport, variant, signedIn))
  })
}

export default emailCodeRoutes
