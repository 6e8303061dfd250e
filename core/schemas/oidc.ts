import { Type, type Static } from '@sinclair/typebox'

/** An RFC 7636 S256 code_challenge: the base64url SHA-256 of a verifier, 43 characters (what s256 of core/oidc/login-code.ts makes). */
const CODE_CHALLENGE_PATTERN = '^[A-Za-z0-9_-]{43}$'

export const ProviderParams = Type.Object({
  provider: Type.String({ minLength: 1, maxLength: 32, description: 'A name of OIDC_PROVIDERS' })
})

export const ProvidersResponse = Type.Object({
  providers: Type.Array(Type.Object({
    name: Type.String({ description: 'Sign in at GET /auth/oidc/{name}' }),
    label: Type.String({ description: 'For the button: "Sign in with <label>"' })
  }))
})

const RedirectTo = Type.String({
  minLength: 1,
  maxLength: 2048,
  description: 'Where the browser goes after the sign-in: a path of this service (default /account) or a URL under ALLOWED_ORIGINS. ' +
    'Sent back percent-encoded (a character beyond ASCII becomes its UTF-8 %XX)'
})

/** The cookie variant's start. */
export const SignInQuery = Type.Object({
  redirect_to: Type.Optional(RedirectTo)
})

/** The header variant's start: the #code= is bound to the app's PKCE challenge (RFC 7636), so it is worth nothing to another app (login CSRF). */
export const HeaderSignInQuery = Type.Object({
  redirect_to: Type.Optional(RedirectTo),
  code_challenge: Type.String({
    pattern: CODE_CHALLENGE_PATTERN,
    description: 'Required: base64url(SHA-256(code_verifier)), 43 characters, of a code_verifier the app keeps (RFC 7636 S256); ' +
      'the app sends the verifier with the #code= to POST /auth/oidc/exchange'
  }),
  code_challenge_method: Type.Optional(Type.Literal('S256', { description: 'S256 only (the default)' }))
})

/** What the provider sends back to the callback (RFC 6749 4.1.2, RFC 9207 `iss`); anything else is ignored. */
export const CallbackQuery = Type.Object({
  state: Type.Optional(Type.String({ maxLength: 512 })),
  code: Type.Optional(Type.String({ maxLength: 4096 })),
  error: Type.Optional(Type.String({ maxLength: 256 })),
  error_description: Type.Optional(Type.String({ maxLength: 2048 })),
  iss: Type.Optional(Type.String({ maxLength: 2048 }))
})

export const ExchangeBody = Type.Object({
  code: Type.String({ minLength: 1, maxLength: 256, description: 'The one-time #code= the callback sent the browser back with' }),
  // Optional in the schema only so that a code sent without it is spent (400 INVALID_CODE) rather than left to a second try.
  code_verifier: Type.Optional(Type.String({
    maxLength: 256,
    description: 'Required for a sign-in: the PKCE code_verifier whose S256 challenge the app sent to GET /auth/oidc/{provider}; ' +
      'without it, or with another, the answer is 400 INVALID_CODE and the code is spent'
  }))
}, { additionalProperties: false })

export const IdentitiesResponse = Type.Object({
  identities: Type.Array(Type.Object({
    provider: Type.String(),
    email: Type.Union([Type.String(), Type.Null()], { description: 'The email the provider gave when the identity was linked' }),
    created_at: Type.String({ format: 'date-time' })
  }))
})

export type IdentitiesResponseBody = Static<typeof IdentitiesResponse>
