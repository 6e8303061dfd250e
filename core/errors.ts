import createError from '@fastify/error'

/*
 * Every error code the service answers with, defined once. The error handler
 * turns any of these into the contract's body:
 * { statusCode, code, error, message }.
 */
export const ValidationFailedError = createError<[string]>('VALIDATION_FAILED', '%s', 400)
export const InvalidJsonError = createError('INVALID_JSON', 'The request body is not valid JSON', 400)
export const PasswordTooCommonError = createError('PASSWORD_TOO_COMMON', 'This password is one of the most commonly used; choose another', 400)
export const InvalidCredentialsError = createError('INVALID_CREDENTIALS', 'Email or password is incorrect', 401)
export const MissingTokenError = createError<[string]>('MISSING_TOKEN', '%s', 401)
export const InvalidTokenError = createError('INVALID_TOKEN', 'The access token is malformed, forged or signed by an unknown key', 401)
export const TokenExpiredError = createError('TOKEN_EXPIRED', 'The access token has expired', 401)
export const InvalidRefreshTokenError = createError('INVALID_REFRESH_TOKEN', 'The refresh token is unknown, expired or revoked', 401)
export const RefreshTokenReusedError = createError('REFRESH_TOKEN_REUSED', 'The refresh token was already used; the session has been revoked', 401)
export const SessionRevokedError = createError('SESSION_REVOKED', 'The session of this access token has ended (logout, password change or reset, session deleted)', 401)
export const InvalidResetTokenError = createError('INVALID_RESET_TOKEN', 'The password-reset token is unknown, already used or replaced by a newer one', 400)
export const ResetTokenExpiredError = createError('RESET_TOKEN_EXPIRED', 'The password-reset token has expired; request a new one', 400)
export const InvalidVerificationTokenError = createError('INVALID_VERIFICATION_TOKEN', 'The email-verification token is unknown, already used or replaced by a newer one', 400)
export const VerificationTokenExpiredError = createError('VERIFICATION_TOKEN_EXPIRED', 'The email-verification token has expired; request a new one', 400)
export const InvalidMfaSetupCodeError = createError('INVALID_MFA_CODE', 'The code does not match the new TOTP secret; check the authenticator app\'s clock and try the current code', 400)
export const InvalidMfaCodeError = createError('INVALID_MFA_CODE', 'The code is wrong, already used, or not from this account\'s authenticator', 401)
export const InvalidMfaTokenError = createError('INVALID_MFA_TOKEN', 'The mfa_token is unknown, expired, already used or void after too many wrong codes; log in again', 401)
export const InvalidRedirectError = createError('INVALID_REDIRECT', 'redirect_to must be a path of this service or a URL under one of ALLOWED_ORIGINS', 400)
export const InvalidOidcStateError = createError('INVALID_STATE', 'The sign-in state is missing, forged or expired (start again from the sign-in button, in the same browser)', 400)
export const InvalidCodeError = createError('INVALID_CODE', 'The sign-in code is unknown, already used or expired (it lives 60 seconds)', 400)
/** A mailed sign-in code (POST /auth/email-code/verify, POST /auth/reauthenticate's email_code): the contract's 401. */
export const InvalidEmailCodeError = createError('INVALID_CODE', 'The code is wrong, expired, already used, replaced by a newer one, or void after five wrong tries; ask for a new one', 401)
export const TokenMismatchError = createError('TOKEN_MISMATCH', 'The access token and the refresh token belong to different users', 401)
export const SessionExpiredError = createError('SESSION_EXPIRED', 'The session has reached its maximum age (SESSION_MAX_AGE); log in again', 401)
export const ReauthenticationRequiredError = createError('REAUTHENTICATION_REQUIRED', 'Confirm your password first (POST /auth/reauthenticate): this change needs a recent password proof', 403)
export const InvalidPasskeyRegistrationError = createError<[string]>('INVALID_PASSKEY_REGISTRATION', '%s', 400)
export const InvalidPasskeyError = createError('INVALID_PASSKEY', 'The passkey could not be verified (unknown passkey, unknown or used or expired challenge, no user verification, or a bad signature); ask for new options and try again', 401)
export const PasskeyCounterRegressedError = createError('PASSKEY_COUNTER_REGRESSED', 'The passkey\'s signature counter went back: it may have been cloned, so it is refused', 401)
export const MfaLockedError = createError('MFA_LOCKED', 'Too many wrong codes were entered for this account: its second factor refuses every code until the password is reset (POST /auth/forgot-password)', 403)
export const MfaRequiredError = createError('MFA_REQUIRED', 'This account has a second factor: send a code with the mfa_token to POST /auth/mfa/verify', 403)
export const MfaCodeRequiredError = createError('MFA_REQUIRED', 'This account has a second factor: send a current TOTP code (or a recovery code) as `code` with the password', 403)
export const ForbiddenError = createError('FORBIDDEN', 'A user may only read and update itself', 403)
export const AccountDisabledError = createError('ACCOUNT_DISABLED', 'This account is disabled; ask an administrator', 403)
export const AdminOnlyError = createError('FORBIDDEN', 'Only administrators may use the admin API', 403)
export const MfaEnrollmentRequiredError = createError('MFA_ENROLLMENT_REQUIRED', 'Administrators need a second factor (TOTP or a passkey) to use the admin API: turn one on first', 403)
export const SecondFactorRequiredError = createError('SECOND_FACTOR_REQUIRED',
  'This needs a session that used your second factor: confirm it with your passkey (POST /auth/passkeys/reauthenticate), ' +
  'or with your password and authenticator code (POST /auth/reauthenticate), or sign in again with one', 403)
export const EmailNotVerifiedError = createError('EMAIL_NOT_VERIFIED', 'Verify your email address before logging in (see the mail we sent, or ask for a new one)', 403)
export const CrossSiteRequestError = createError('CROSS_SITE_REQUEST', 'Cross-site requests carrying cookies are refused', 403)
export const InteractionNotFoundError = createError('INTERACTION_NOT_FOUND', 'This sign-in for an app has expired or was opened in another browser; start again from the app', 400)
export const InteractionStepError = createError<[string]>('INTERACTION_STEP', '%s', 409)
export const FreshSignInRequiredError = createError('FRESH_SIGN_IN_REQUIRED', 'The app asks you to sign in again: enter your password or use a passkey', 401)
export const UserNotFoundError = createError('USER_NOT_FOUND', 'The user does not exist', 404)
/** Also a non-member's answer on every route of an organisation: its existence is not disclosed. */
export const OrgNotFoundError = createError('ORG_NOT_FOUND', 'There is no such organisation, or you are not a member of it', 404)
export const OrgForbiddenError = createError<[string]>('ORG_FORBIDDEN', '%s', 403)
export const LastOwnerError = createError('LAST_OWNER', 'This would leave the organisation without an owner: make another member owner first', 409)
export const SlugTakenError = createError('SLUG_TAKEN', 'Another organisation has that slug', 409)
export const InvitationEmailMismatchError = createError('INVITATION_EMAIL_MISMATCH', 'This invitation was made for another address: sign in with the account of the address it was mailed to', 403)
export const InvitationNotFoundError = createError('INVITATION_NOT_FOUND', 'The organisation has no pending invitation with this id', 404)
/** An unusable invitation answers as a used reset link does (the contract): the same code, its own words. */
export const InvalidInvitationError = createError('INVALID_RESET_TOKEN', 'The invitation is unknown, already accepted, withdrawn or expired; ask for a new one', 400)
export const SessionNotFoundError = createError('SESSION_NOT_FOUND', 'No such session of yours', 404)
export const AppNotFoundError = createError('APP_NOT_FOUND', 'No app has access to your account with that client id', 404)
export const PasskeyNotFoundError = createError('PASSKEY_NOT_FOUND', 'No such passkey of yours', 404)
export const RouteNotFoundError = createError<[string, string]>('NOT_FOUND', 'Route %s %s not found', 404)
export const EmailTakenError = createError('EMAIL_TAKEN', 'That email address is already registered', 409)
export const UsernameTakenError = createError('USERNAME_TAKEN', 'That username is already taken', 409)
export const PasskeyAlreadyRegisteredError = createError('PASSKEY_ALREADY_REGISTERED', 'This passkey is already registered', 409)
export const TotpAlreadyEnabledError = createError('TOTP_ALREADY_ENABLED', 'TOTP is already on for this account; turn it off first (DELETE /auth/mfa/totp)', 409)
export const TotpSetupNotStartedError = createError('TOTP_SETUP_NOT_STARTED', 'No TOTP secret is waiting for confirmation; start with POST /auth/mfa/totp', 409)
export const TotpNotEnabledError = createError('TOTP_NOT_ENABLED', 'TOTP is not on for this account', 409)
export const ProviderNotFoundError = createError('PROVIDER_NOT_FOUND', 'No such sign-in provider', 404)
export const IdentityNotFoundError = createError('IDENTITY_NOT_FOUND', 'No identity of yours at that provider', 404)
export const TargetIsAdminError = createError('TARGET_IS_ADMIN',
  'The user is an administrator: one admin may not disable, delete, end the sessions of or reset the second factor of another; ' +
  'the operator demotes it first (account-service users set-role <id> user)', 409)
export const LastAdminError = createError('LAST_ADMIN', 'You are the last enabled administrator: make another admin before you disable, delete or demote yourself', 409)
export const PasswordAlreadySetError = createError('PASSWORD_ALREADY_SET', 'This account has a password: change it with POST /auth/change-password', 409)
export const LastLoginMethodError = createError('LAST_LOGIN_METHOD', 'This is your last way to sign in: set a password (forgot-password) or link another provider first', 409)
export const PayloadTooLargeError = createError('PAYLOAD_TOO_LARGE', 'The request body is larger than the limit', 413)
export const UnsupportedMediaTypeError = createError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be JSON (Content-Type: application/json)', 415)
export const RateLimitedError = createError<[number]>('RATE_LIMITED', 'Too many attempts; retry in %d seconds', 429)
export const BusyError = createError('BUSY', 'Too many password checks are waiting; retry shortly', 503)
export const InternalError = createError('INTERNAL_ERROR', 'Something went wrong on our side', 500)

/** An error whose answer carries `Retry-After`: the error handler sets the header from `retryAfter`. */
export type RetryableError = Error & { retryAfter: number }

/** 429 RATE_LIMITED, retry in `seconds`. */
export function rateLimited (seconds: number): RetryableError {
  return Object.assign(new RateLimitedError(seconds), { retryAfter: seconds })
}

/** An error whose answer adds fields to the error shape: the error handler copies `bodyFields` into the body. */
export type ErrorWithBodyFields = Error & { bodyFields: Record<string, string> }

/** 403 MFA_REQUIRED, with the `mfa_token` that POST /auth/mfa/verify takes. */
export function mfaRequired (mfaToken: string): ErrorWithBodyFields {
  return Object.assign(new MfaRequiredError(), { bodyFields: { mfa_token: mfaToken } })
}

/** 503 BUSY: the password-hashing queue is full. */
export function busy (): RetryableError {
  return Object.assign(new BusyError(), { retryAfter: 1 })
}
