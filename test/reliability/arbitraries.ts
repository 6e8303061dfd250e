import fc from 'fast-check'

/*
 * fast-check generators of hostile requests. Tokens are symbolic (a TokenKind)
 * and resolved when the request is sent, so that a request always carries the
 * session's current tokens even after an earlier case rotated or ended them.
 */

export type TokenKind =
  | 'ownAccess' | 'ownRefresh' | 'otherAccess' | 'otherRefresh'
  | 'tamperedAccess' | 'algNone' | 'hs256' | 'junkHeaderJwt' | 'refreshAsAccess' | 'accessAsRefresh'
  | { literal: string }

export interface FuzzRequest {
  method: string
  /** Route path with `:param`s still in; filled by `fill`. */
  path: string
  params: string[]
  query: string
  /** Whose tokens travel where the variant expects them, before `headers` add to or override them. */
  credentials: 'none' | 'own' | 'other'
  headers: Array<[string, HeaderValue]>
  payload?: string | Buffer
}

/** A header value: text, or a token slot such as `Bearer <token>`. */
export type HeaderValue = string | { before: string, token: TokenKind, after: string } | { cookies: Array<[string, TokenKind]>, junk: string }

const FIELD_NAMES = ['first_name', 'last_name', 'username', 'email', 'password', 'id', 'accessToken', 'refreshToken', 'user']
const PROTO_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf']

const printable = fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map(code => String.fromCharCode(code)), maxLength: 60 })
// What Node's HTTP parser lets through in a header value: visible ASCII, tab and obs-text (read as latin1).
const headerText = fc.string({
  unit: fc.oneof(fc.integer({ min: 0x20, max: 0x7e }), fc.constant(0x09), fc.integer({ min: 0x80, max: 0xff })).map(code => String.fromCharCode(code)),
  maxLength: 80
})
const weirdString = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.constantFrom('', ' ', '\u0000', '\uFEFF', '\uD800', 'null', 'undefined', 'NaN', '<script>', "' OR 1=1 --", '../../etc/passwd', 'ada@example.com', ' ADA@Example.COM ', 'a'.repeat(300))
)

export const tokenKind: fc.Arbitrary<TokenKind> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom<TokenKind>('ownAccess', 'ownRefresh', 'otherAccess', 'otherRefresh') },
  { weight: 3, arbitrary: fc.constantFrom<TokenKind>('tamperedAccess', 'algNone', 'hs256', 'junkHeaderJwt', 'refreshAsAccess', 'accessAsRefresh') },
  { weight: 3, arbitrary: fc.oneof(printable, fc.base64String({ maxLength: 60 }), fc.nat({ max: 6000 }).map(size => 'x'.repeat(size))).map(literal => ({ literal })) }
)

const bearer = fc.record({
  before: fc.constantFrom('Bearer ', 'bearer ', 'BEARER  ', 'Bearer', 'Basic ', '', 'Bearer \t', 'Token '),
  token: tokenKind,
  after: fc.constantFrom('', '', ' ', ',', ' extra', '\t')
})

const cookieHeader = fc.record({
  cookies: fc.array(fc.tuple(fc.constantFrom('accessToken', 'refreshToken', 'AccessToken', 'session', ''), tokenKind), { maxLength: 3 }),
  junk: fc.constantFrom('', ';', '; ;', '=;', 'accessToken', 'accessToken=', 'refreshToken="quoted"', 'a=%E0%A4%A', 'x=\u00ff\u00fe', '; refreshToken=%00')
})

const contentType = fc.constantFrom(
  'application/json', 'application/json; charset=utf-8', 'application/json; charset=latin1', 'APPLICATION/JSON',
  'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/xml',
  'application/json-patch+json', 'application/*', '', ';', 'json', 'application/json; boundary="'
)

const header: fc.Arbitrary<[string, HeaderValue]> = fc.oneof(
  { weight: 4, arbitrary: fc.tuple(fc.constant('authorization'), bearer) },
  { weight: 3, arbitrary: fc.tuple(fc.constant('x-refresh-token'), bearer) },
  { weight: 4, arbitrary: fc.tuple(fc.constant('cookie'), cookieHeader) },
  { weight: 3, arbitrary: fc.tuple(fc.constant('content-type'), contentType) },
  { weight: 1, arbitrary: fc.tuple(fc.constant('origin'), fc.constantFrom('http://localhost:80', 'https://evil.example', 'null', 'http://localhost', '')) },
  { weight: 1, arbitrary: fc.tuple(fc.constant('sec-fetch-site'), fc.constantFrom('same-origin', 'cross-site', 'none', 'same-site', '')) },
  { weight: 1, arbitrary: fc.tuple(fc.constantFrom('accept', 'accept-encoding', 'x-forwarded-for', 'x-forwarded-proto', 'host', 'transfer-encoding', 'content-encoding', 'expect', 'content-length'), headerText) },
  { weight: 1, arbitrary: fc.tuple(fc.stringMatching(/^x-[a-z0-9-]{1,20}$/), headerText) }
)

/** A JSON text that the parser must take apart without polluting a prototype. */
const protoJson = fc.tuple(fc.constantFrom(...PROTO_KEYS), fc.jsonValue({ maxDepth: 2 }), fc.dictionary(fc.constantFrom(...FIELD_NAMES), weirdString, { maxKeys: 3 }))
  .map(([key, value, fields]) => {
    const rest = Object.entries(fields).map(([name, text]) => `,${JSON.stringify(name)}:${JSON.stringify(text)}`).join('')
    return `{${JSON.stringify(key)}:${JSON.stringify(value)}${rest}}`
  })

/** Bodies with the right field names and the wrong values or types. */
const wrongTypes = fc.dictionary(fc.constantFrom(...FIELD_NAMES), fc.oneof(weirdString, fc.jsonValue({ maxDepth: 2 })), { maxKeys: 6 }).map(body => JSON.stringify(body))

/** A valid registration, login or update body, or one with one field made wrong: it reaches deeper than a schema failure. */
const nearlyValid = fc.tuple(
  fc.constantFrom(
    { first_name: 'Fuzz', last_name: 'Case', username: 'fuzz_case', email: 'fuzz@example.com', password: 'fuzzing password' },
    { first_name: 'Fuzz', last_name: 'Case', email: 'fuzz@example.com', password: 'fuzzing password' },
    { email: 'fuzz@example.com', password: 'fuzzing password' },
    { first_name: 'Renamed' }
  ),
  fc.option(fc.tuple(fc.constantFrom(...FIELD_NAMES), fc.oneof(weirdString, fc.jsonValue({ maxDepth: 1 }), fc.constant(undefined))), { freq: 4 })
).map(([base, change]) => JSON.stringify(change === null ? base : { ...base, [change[0]]: change[1] }))

const deepNesting = fc.tuple(fc.integer({ min: 50, max: 12_000 }), fc.constantFrom('array', 'object', 'unclosed'))
  .map(([depth, kind]) => kind === 'array'
    ? '['.repeat(depth) + ']'.repeat(depth)
    : kind === 'object' ? '{"a":'.repeat(depth) + '1' + '}'.repeat(depth) : '{"email":'.repeat(depth))

const hugeString = fc.tuple(fc.constantFrom(...FIELD_NAMES), fc.integer({ min: 200, max: 40_000 }), fc.constantFrom('a', 'é', '\u{1F600}', '\\u0000'))
  .map(([field, size, unit]) => `{${JSON.stringify(field)}:"${unit.repeat(size)}"}`)

/** Bytes that are not UTF-8: a lone continuation byte, an overlong encoding, a surrogate, random bytes. */
const invalidUtf8 = fc.oneof(
  fc.tuple(fc.constantFrom('email', 'first_name', 'password', 'username'), fc.constantFrom([0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0x80], [0xf8, 0x88, 0x80, 0x80, 0x80], [0xe2, 0x28, 0xa1]))
    .map(([field, bytes]) => Buffer.concat([Buffer.from(`{"${field}":"`), Buffer.from(bytes), Buffer.from('"}')])),
  fc.uint8Array({ maxLength: 200 }).map(bytes => Buffer.from(bytes))
)

export const payload: fc.Arbitrary<string | Buffer | undefined> = fc.oneof(
  { weight: 2, arbitrary: fc.constant(undefined) },
  { weight: 3, arbitrary: fc.jsonValue({ maxDepth: 4 }).map(value => JSON.stringify(value)) },
  { weight: 3, arbitrary: wrongTypes },
  { weight: 3, arbitrary: nearlyValid },
  { weight: 2, arbitrary: protoJson },
  { weight: 1, arbitrary: deepNesting },
  { weight: 1, arbitrary: hugeString },
  { weight: 2, arbitrary: invalidUtf8 },
  { weight: 1, arbitrary: fc.string({ maxLength: 80 }) }
)

/** What fills a `:param`: the caller's own id, another, or anything that is not an id. */
export const paramValue = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('$own', '$other') },
  { weight: 2, arbitrary: fc.constantFrom('0', '-1', '1.5', '1e3', '01', '+1', '0x10', '9007199254740993', '99999999999999999999999', 'NaN', '%00', '%zz', '%F0%9F%98%80', '%2F', '..', 'null', '[]', ' 1') },
  { weight: 1, arbitrary: fc.integer().map(String) },
  { weight: 1, arbitrary: printable.map(text => encodeURIComponent(text)) }
)

const query = fc.oneof(
  { weight: 4, arbitrary: fc.constant('') },
  { weight: 1, arbitrary: fc.constantFrom('?', '?userId=1', '?__proto__[admin]=1', '?a=%zz', '?constructor.prototype.x=1', `?${'q'.repeat(5000)}=1`) },
  { weight: 1, arbitrary: printable.map(text => `?${encodeURIComponent(text)}=${encodeURIComponent(text)}`) }
)

export const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

/** Requests aimed at one route: mostly its own method, sometimes another. */
export function requestTo (route: { method: string, url: string }): fc.Arbitrary<FuzzRequest> {
  const paramCount = (route.url.match(/:[A-Za-z]+/g) ?? []).length
  return fc.record({
    method: fc.oneof({ weight: 9, arbitrary: fc.constant(route.method) }, { weight: 1, arbitrary: fc.constantFrom(...METHODS) }),
    path: fc.constant(route.url),
    params: fc.array(paramValue, { minLength: paramCount, maxLength: paramCount }),
    query,
    credentials: fc.constantFrom('none', 'own', 'own', 'other'),
    headers: fc.array(header, { maxLength: 4 }),
    payload
  })
}

/** Requests to paths no route has, or near misses of real ones. */
export const strayRequest: fc.Arbitrary<FuzzRequest> = fc.record({
  method: fc.constantFrom(...METHODS),
  path: fc.oneof(
    fc.constantFrom('/', '/auth', '/auth/', '/auth/register/', '/AUTH/LOGIN', '/users', '/users/', '/users/1/2', '//auth//login', '/auth/../users/1', '/%', '/%zz', '/.well-known', '/health/', '/auth/auth-me'),
    fc.array(printable.map(text => encodeURIComponent(text)), { minLength: 1, maxLength: 4 }).map(segments => `/${segments.join('/')}`)
  ),
  params: fc.constant([]),
  query,
  credentials: fc.constantFrom('none', 'own'),
  headers: fc.array(header, { maxLength: 4 }),
  payload
})
