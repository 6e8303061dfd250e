import { createHash } from 'node:crypto'
import t from 'tap'
import { hashToken, newRandomToken } from '../../core/tokens/random-token.js'

t.test('a random token is 256 bits of base64url, a new one each time', async (t) => {
  const tokens = new Set(Array.from({ length: 100 }, () => newRandomToken()))
  t.equal(tokens.size, 100, 'no two alike')
  for (const token of tokens) {
    t.match(token, /^[A-Za-z0-9_-]{43}$/, 'safe in a cookie, a header and a link as is')
    t.equal(Buffer.from(token, 'base64url').length, 32)
  }
})

t.test('tokens drawn across many refills of the random pool never repeat, and none is the zeroed bytes of a used one', async (t) => {
  const tokens = Array.from({ length: 1000 }, () => newRandomToken())
  t.equal(new Set(tokens).size, tokens.length, 'a thousand tokens, eight pools: all different')
  t.notOk(tokens.some(token => Buffer.from(token, 'base64url').every(byte => byte === 0)), 'no token of zeroes')
})

t.test('the store keeps the SHA-256 of the token, base64url', async (t) => {
  const token = newRandomToken()
  t.equal(hashToken(token), createHash('sha256').update(token).digest('base64url'))
  t.not(hashToken(token), token)
})
