/**
 * Where a provider sign-in may send the browser back to (`redirect_to`): a path of this service,
 * or a URL under one of ALLOWED_ORIGINS. Anything else would make the sign-in an open redirect
 * that hands a `#code=` to whoever wrote the link. Undefined when refused.
 */
export function redirectTarget (value: string, allowedOrigins: readonly string[]): string | undefined {
  // A lone surrogate is no text: it has no UTF-8 form to percent-encode.
  if (/\p{Cs}/u.test(value)) return undefined
  // Our fragment (#code=, #error=) is appended: a target with one of its own is refused.
  // A backslash or a control character: browsers read "/\\evil.example" as another host.
  if (value.includes('#') || value.includes('\\') || [...value].some(character => character.charCodeAt(0) < 0x20 || character.charCodeAt(0) === 0x7f)) return undefined
  if (value.startsWith('/')) {
    // "//evil.example" is a URL of another host, not a path.
    if (value.startsWith('//')) return undefined
    return percentEncoded(value)
  }
  if (!URL.canParse(value)) return undefined
  const url = new URL(value)
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined
  if (url.username !== '' || url.password !== '') return undefined
  // The URL parser percent-encodes the path and query already.
  return allowedOrigins.includes(url.origin) ? url.href : undefined
}

/**
 * The path with every character outside printable ASCII (a space, anything beyond U+007E) in
 * UTF-8 percent-encoding: it goes into a Location header, which cannot carry a character above
 * U+00FF (Node refuses to write it) and should carry none above U+007E. '%' stays as it is: a
 * target already encoded is not encoded twice.
 */
function percentEncoded (path: string): string {
  return path.replace(/[^\x21-\x7e]/gu, character => encodeURIComponent(character))
}
