/**
 * Where a provider sign-in may send the browser back to (`redirect_to`): a path of this service,
 * or a URL under one of ALLOWED_ORIGINS. Anything else would make the sign-in an open redirect
 * that hands a `#code=` to whoever wrote the link. Undefined when refused.
 */
export function redirectTarget (value: string, allowedOrigins: readonly string[]): string | undefined {
  // Our fragment (#code=, #error=) is appended: a target with one of its own is refused.
  // A backslash or a control character: browsers read "/\\evil.example" as another host.
  if (value.includes('#') || value.includes('\\') || [...value].some(character => character.charCodeAt(0) < 0x20 || character.charCodeAt(0) === 0x7f)) return undefined
  if (value.startsWith('/')) {
    // "//evil.example" is a URL of another host, not a path.
    if (value.startsWith('//')) return undefined
    return value
  }
  if (!URL.canParse(value)) return undefined
  const url = new URL(value)
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined
  if (url.username !== '' || url.password !== '') return undefined
  return allowedOrigins.includes(url.origin) ? url.href : undefined
}
