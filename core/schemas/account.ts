import { Type, type Static } from '@sinclair/typebox'
import type { SessionRecord, UserRecord } from '../../db/store.js'
import type { Variant } from '../config.js'
import { Email, NO_NUL, Password } from './common.js'
import { EmailCode } from './email-code.js'
import { MfaStatusView, presentMfaStatus, type MfaStatus } from './mfa.js'
import { CookieVariantUser, HeaderVariantUser, presentUser } from './users.js'

/** A mailed token as the client got it from the link; longer input is refused before any lookup. */
const MailedToken = Type.String({ minLength: 1, maxLength: 256, description: 'The token from the mailed link' })
/** A password being checked (not chosen): as lenient as login's, so a legacy password still matches. */
const CurrentPassword = Type.String({ minLength: 1, maxLength: 1024 })

export const ChangePasswordBody = Type.Object({
  current_password: CurrentPassword,
  new_password: Password
}, { additionalProperties: false })

export const ForgotPasswordBody = Type.Object({ email: Email }, { additionalProperties: false })

export const ResetPasswordBody = Type.Object({
  token: MailedToken,
  new_password: Password
}, { additionalProperties: false })

export const VerifyEmailBody = Type.Object({ token: MailedToken }, { additionalProperties: false })

export const DeleteUserBody = Type.Object({
  password: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'Required when the account has a password; an account without one (provider or passkey only) needs a fresh session instead' }))
}, { additionalProperties: false })

/** 202: the request is taken; whether a mail goes out is not told. */
export const AcceptedResponse = Type.Object({ message: Type.String() })

const accountFields = {
  email_verified: Type.Boolean(),
  created_at: Type.String({ format: 'date-time' }),
  mfa: MfaStatusView
}

/** The user as its variant shows it, plus the state only its owner sees. */
export const AccountResponse = {
  header: Type.Object({ ...HeaderVariantUser.properties, ...accountFields }, { additionalProperties: false }),
  cookie: Type.Object({ ...CookieVariantUser.properties, ...accountFields }, { additionalProperties: false })
} as const satisfies Record<Variant, unknown>

export function presentAccount (user: UserRecord, variant: Variant, mfa: MfaStatus) {
  return { ...presentUser(user, variant), email_verified: user.emailVerified, created_at: user.createdAt.toISOString(), mfa: presentMfaStatus(mfa) }
}

export const SessionView = Type.Object({
  id: Type.String({ description: 'The session id (the sid claim of its access tokens)' }),
  created_at: Type.String({ format: 'date-time' }),
  last_used_at: Type.String({ format: 'date-time', description: 'Its last login or refresh' }),
  user_agent: Type.Union([Type.String(), Type.Null()]),
  ip: Type.Union([Type.String(), Type.Null()]),
  current: Type.Boolean({ description: 'The session of the access token that asked' })
}, { additionalProperties: false })

export const SessionsResponse = Type.Array(SessionView)

export function presentSession (session: SessionRecord, currentSessionId: string): Static<typeof SessionView> {
  return {
    id: session.id,
    created_at: session.createdAt.toISOString(),
    last_used_at: session.lastUsedAt.toISOString(),
    user_agent: session.userAgent,
    ip: session.ip,
    current: session.id === currentSessionId
  }
}

export const SessionParams = Type.Object({ sessionId: Type.String({ minLength: 1, maxLength: 64, pattern: NO_NUL }) }, { additionalProperties: false })

export const ReauthenticateBody = Type.Object({
  password: Type.Optional({ ...CurrentPassword, description: 'The account\'s password; or send `email_code` instead' }),
  email_code: Type.Optional({ ...EmailCode, description: 'A code POST /auth/email-code mailed to the account\'s address; or send `password` instead' }),
  code: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: NO_NUL, description: 'Required when the account has TOTP: six digits from the authenticator app, or a recovery code' }))
}, { additionalProperties: false })
