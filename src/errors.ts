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
export const TokenMismatchError = createError('TOKEN_MISMATCH', 'The access token and the refresh token belong to different users', 401)
export const ForbiddenError = createError('FORBIDDEN', 'A user may only read and update itself', 403)
export const EmailNotVerifiedError = createError('EMAIL_NOT_VERIFIED', 'Verify your email address before logging in (see the mail we sent, or ask for a new one)', 403)
export const CrossSiteRequestError = createError('CROSS_SITE_REQUEST', 'Cross-site requests carrying cookies are refused', 403)
export const UserNotFoundError = createError('USER_NOT_FOUND', 'The user does not exist', 404)
export const SessionNotFoundError = createError('SESSION_NOT_FOUND', 'No such session of yours', 404)
export const RouteNotFoundError = createError<[string, string]>('NOT_FOUND', 'Route %s %s not found', 404)
export const EmailTakenError = createError('EMAIL_TAKEN', 'That email address is already registered', 409)
export const UsernameTakenError = createError('USERNAME_TAKEN', 'That username is already taken', 409)
export const PayloadTooLargeError = createError('PAYLOAD_TOO_LARGE', 'The request body is larger than the limit', 413)
export const UnsupportedMediaTypeError = createError('UNSUPPORTED_MEDIA_TYPE', 'The request body must be JSON (Content-Type: application/json)', 415)
export const RateLimitedError = createError<[number]>('RATE_LIMITED', 'Too many attempts; retry in %d seconds', 429)
export const StoreUnavailableError = createError('STORE_UNAVAILABLE', 'The account store is unavailable; retry shortly', 503)
export const InternalError = createError('INTERNAL_ERROR', 'Something went wrong on our side', 500)
