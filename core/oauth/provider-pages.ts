import type { ErrorOut, KoaContextWithOIDC } from 'oidc-provider'

/*
 * The pages oidc-provider renders itself (its device-flow code entry and success, its logout
 * confirmation, its errors), in the style of the service's other pages: the same stylesheet, no
 * inline script or style, under the pages' CSP. Sign-in and consent are the service's own page
 * (routes/oauth/, routes/pages/public/authorize.*).
 */

const CSP = "default-src 'none'; base-uri 'none'; frame-ancestors 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'"

export function escapeHtml (value: unknown): string {
  return String(value).replace(/[&<>"']/g, character => `&#${character.charCodeAt(0)};`)
}

function render (ctx: KoaContextWithOIDC, title: string, body: string, formAction = "'self'"): void {
  ctx.type = 'html'
  ctx.set('content-security-policy', CSP.replace("form-action 'self'", `form-action ${formAction}`))
  ctx.set('cache-control', 'no-store')
  ctx.body = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <meta name="color-scheme" content="light dark">
  <title>${escapeHtml(title)}</title>
  <link rel="icon" href="data:,">
  <link rel="stylesheet" href="/assets/pages.css">
</head>
<body>
  <main>
    <h1>${escapeHtml(title)}</h1>
    ${body}
  </main>
</body>
</html>`
}

const clientName = (ctx: KoaContextWithOIDC) => ctx.oidc.client?.clientName ?? ctx.oidc.client?.clientId

/** RFC 8628's verification page: a field labelled with "code" and a "Continue" button; the sign-in and consent follow. */
export async function deviceCodePage (ctx: KoaContextWithOIDC, form: string, _out?: unknown, error?: Error & { userCode?: string }): Promise<void> {
  const message = error === undefined
    ? '<p>Enter the code your device shows.</p>'
    : error.name === 'NoCodeError' || error.userCode !== undefined
      ? '<p class="message error" role="alert">That code is not right, or has expired. Try again.</p>'
      : error.name === 'AbortedError'
        ? '<p class="message error" role="alert">The sign-in was cancelled.</p>'
        : '<p class="message error" role="alert">Something went wrong. Try again.</p>'
  // oidc-provider's form carries the xsrf field; its code input has no label and an inline onfocus (which the
  // CSP refuses): it is replaced. confirm=yes skips oidc-provider's separate confirmation page: the consent
  // page that follows names the app, and a device flow always shows it (core/oauth/provider.ts).
  const labelled = form.replace(/<input\s[^>]*name="user_code"[^>]*>(<\/input>)?/,
    '<label for="user-code">Device code</label><input id="user-code" type="text" name="user_code" autocomplete="off" autocapitalize="characters" spellcheck="false" autofocus required>' +
    '<input type="hidden" name="confirm" value="yes">')
  render(ctx, 'Sign in a device', `<div class="card">${message}${labelled}<button type="submit" form="op.deviceInputForm">Continue</button></div>`)
}

/**
 * Not reached from our code page (it confirms at once, and the consent page follows); a device link with the
 * code in it lands here: it names the app and the code (RFC 8628 §5.4). Cancel (abort) refuses the device.
 */
export async function deviceConfirmPage (ctx: KoaContextWithOIDC, form: string, _client: unknown, _deviceInfo: unknown, userCode: string): Promise<void> {
  const name = clientName(ctx)
  render(ctx, 'Sign in a device?', `<div class="card"><p><strong>${name === undefined ? 'An app' : escapeHtml(name)}</strong> asks to sign in to your account on a device showing the code <code>${escapeHtml(userCode)}</code>.</p>
    <p>Continue only if you started this on your own device and it shows this code. If someone gave you the code, cancel.</p>${form}
    <button type="submit" form="op.deviceConfirmForm">Continue</button>
    <button type="submit" form="op.deviceConfirmForm" class="secondary" name="abort" value="yes">Cancel</button></div>`)
}

/**
 * A device link with the code in it (verification_uri_complete) gets oidc-provider's page that posts the code
 * at once by an inline script, which it allows by its hash in script-src: that page is given the pages' CSP
 * with a script-src to add it to, and a form-action that lets it post (the API's CSP refuses both).
 */
export function deviceLinkCsp (codeVerificationPath: string) {
  return async function allowDeviceLinkScript (ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
    if (ctx.method === 'GET' && ctx.path === codeVerificationPath) ctx.set('content-security-policy', `${CSP}; script-src 'self'`)
    await next()
  }
}

/** A redirect URI as a CSP source: its origin and path (a query is no part of a source; `;` and `,` would end one). */
function cspSourceOf (redirectUri: string): string | undefined {
  const url = URL.parse(redirectUri)
  if (url === null) return undefined
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return url.protocol
  return `${url.origin}${url.pathname.replace(/[;,\s]/g, character => encodeURIComponent(character))}`
}

/**
 * response_mode=form_post answers with oidc-provider's page that posts the code to the app's redirect URI by an
 * inline script. Its answers (authorization, resume) get a CSP with an empty script-src, to which oidc-provider
 * adds that script's hash; once it has, form-action is opened to the redirect URI alone. Any other answer keeps
 * the API's CSP it came with.
 */
export function formPostCsp (authorizationPath: string) {
  return async function allowFormPostScript (ctx: KoaContextWithOIDC, next: () => Promise<void>): Promise<void> {
    if (ctx.path !== authorizationPath && !ctx.path.startsWith(`${authorizationPath}/`)) return await next()
    const given = ctx.response.get('content-security-policy')
    const pending = "default-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'; script-src"
    ctx.set('content-security-policy', pending)
    await next()
    const csp = ctx.response.get('content-security-policy')
    const redirectUri = ctx.oidc?.params?.redirect_uri
    const source = typeof redirectUri === 'string' ? cspSourceOf(redirectUri) : undefined
    if (csp.includes("'sha256-") && source !== undefined) ctx.set('content-security-policy', csp.replace("form-action 'none'", `form-action ${source}`))
    else if (csp === pending && given !== '') ctx.set('content-security-policy', given)
    else if (csp === pending) ctx.remove('content-security-policy')
  }
}

export async function deviceSuccessPage (ctx: KoaContextWithOIDC): Promise<void> {
  const name = clientName(ctx)
  render(ctx, 'Your device is signed in', `<div class="card"><p>${name === undefined ? 'The device' : escapeHtml(name)} is signed in. You can close this page.</p></div>`)
}

/** RP-initiated logout asks before signing out; the form may lead on to the app's post-logout page. */
export async function logoutPage (ctx: KoaContextWithOIDC, form: string): Promise<void> {
  const redirect = ctx.oidc.params?.post_logout_redirect_uri
  const origin = typeof redirect === 'string' ? URL.parse(redirect)?.origin : undefined
  const name = clientName(ctx)
  render(ctx, 'Sign out?', `<div class="card"><p>${name === undefined ? 'An app' : escapeHtml(name)} asks to sign you out of this account service.</p>${form}
    <button type="submit" form="op.logoutForm" value="yes" name="logout">Sign out</button>
    <button type="submit" form="op.logoutForm" class="secondary">Stay signed in</button></div>`,
  origin === undefined || origin === 'null' ? "'self'" : `'self' ${origin}`)
}

export async function loggedOutPage (ctx: KoaContextWithOIDC): Promise<void> {
  render(ctx, 'You are signed out', '<div class="card"><p>You are signed out. You can close this page.</p></div>')
}

/** The provider's errors in the browser (a bad redirect_uri, a missing PKCE challenge, an unknown client). */
export async function errorPage (ctx: KoaContextWithOIDC, out: ErrorOut, _error: Error): Promise<void> {
  const description = out.error_description ?? out.error
  render(ctx, 'This sign-in cannot go on', `<div class="card"><p class="message error" role="alert">${escapeHtml(description)}</p>
    <p>Go back to the app and try again. Error: <code>${escapeHtml(out.error)}</code></p></div>`)
}
