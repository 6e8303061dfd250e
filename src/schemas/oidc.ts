import { Type, type Static } from '@sinclair/typebox'

export const ProviderParams = Type.Object({
  provider: Type.String({ minLength: 1, maxLength: 32, description: 'A name of OIDC_PROVIDERS' })
})

export const ProvidersResponse = Type.Object({
  providers: Type.Array(Type.Object({
    name: Type.String({ description: 'Sign in at GET /auth/oidc/{name}' }),
    label: Type.String({ description: 'For the button: "Sign in with <label>"' })
  }))
})

export const SignInQuery = Type.Object({
  redirect_to: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 2048,
    description: 'Where the browser goes after the sign-in: a path of this service (default /account) or a URL under ALLOWED_ORIGINS'
  }))
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
  code: Type.String({ minLength: 1, maxLength: 256, description: 'The one-time #code= the callback sent the browser back with' })
}, { additionalProperties: false })

export const IdentitiesResponse = Type.Object({
  identities: Type.Array(Type.Object({
    provider: Type.String(),
    email: Type.Union([Type.String(), Type.Null()], { description: 'The email the provider gave when the identity was linked' }),
    created_at: Type.String({ format: 'date-time' })
  }))
})

export type IdentitiesResponseBody = Static<typeof IdentitiesResponse>
