type InteractionPolicy = typeof import('oidc-provider').interactionPolicy
type Policy = ReturnType<InteractionPolicy['base']>

/** When the provider sends the browser to the sign-in or consent page: oidc-provider's policy, and the two checks below. */
export function providerInteractionPolicy (interactionPolicy: InteractionPolicy): Policy {
  return deviceFlowAsksConsent(signInPolicy(interactionPolicy), interactionPolicy)
}

/**
 * oidc-provider's policy with one more reason to ask for a sign-in: the browser's provider session names
 * an account findAccount no longer gives (deleted, or disabled by an operator). Without it, single sign-on
 * would go on to the consent checks with no account and fail (500); with it, the person signs in again,
 * which a disabled account cannot.
 */
function signInPolicy (interactionPolicy: InteractionPolicy): Policy {
  const policy = interactionPolicy.base()
  const { Check } = interactionPolicy
  policy.get('login')?.checks.add(new Check('account_unavailable', 'The account of the session is gone or disabled', (ctx) =>
    ctx.oidc.session?.accountId !== undefined && ctx.oidc.account === undefined ? Check.REQUEST_PROMPT : Check.NO_NEED_TO_PROMPT), 0)
  return policy
}

/**
 * A device flow always goes through the consent page, which names the app and asks (Allow, Deny), also where
 * a grant exists or the app is trusted: else a user code phished from someone else's device would go
 * straight to "your device is signed in" (RFC 8628 §5.4). Once consent is given, the flow goes on.
 */
function deviceFlowAsksConsent (policy: Policy, { Check }: InteractionPolicy): Policy {
  policy.get('consent')?.checks.add(new Check('device_flow', 'A device flow names the app and asks', (ctx) =>
    ctx.oidc.entities.DeviceCode !== undefined && ctx.oidc.result?.consent === undefined ? Check.REQUEST_PROMPT : Check.NO_NEED_TO_PROMPT))
  return policy
}
