/** HTML text with &, <, >, " and ' escaped: the target goes into an attribute. */
function escapeHtml (value: string): string {
  return value.replace(/[&<>"']/g, character => `&#${character.charCodeAt(0)};`)
}

/**
 * The same-site step of the cookie variant's callback. The callback is reached by a navigation
 * another site (the provider) started: a browser sends no SameSite=Strict cookie on it, nor on a
 * redirect that continues it. A page of ours that moves on by itself (meta refresh, no script, so
 * the Content-Security-Policy allows it) starts a new navigation from our own site, on which the
 * session cookies just set are sent.
 */
export function landingPage (target: string): string {
  const href = escapeHtml(target)
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0;url=${href}">
<title>Signed in</title>
</head>
<body>
<p>Signed in. <a href="${href}">Continue</a></p>
</body>
</html>
`
}
