import t from 'tap'
import { claimsOf, userClaims, userinfoAnswerSchema } from '../../../core/oauth/user-claims.js'

const ada = { id: 7, email: 'ada@example.com', emailVerified: true, firstName: 'Ada', lastName: 'Lovelace', username: 'ada' }

for (const variant of ['header', 'cookie'] as const) {
  t.test(`${variant}: userinfo's answer schema names every claim the scopes name, sub required, and nothing else`, async (t) => {
    const schema = userinfoAnswerSchema(variant)
    const named = new Set(Object.values(claimsOf(variant)).flat())
    t.same(Object.keys(schema.properties).sort(), [...named].sort())
    t.same(schema.required, ['sub'])
    t.equal(schema.additionalProperties, true, 'a claim added to a scope later is answered, not dropped')
  })

  t.test(`${variant}: every claim a user has is typed as the schema says`, async (t) => {
    const schema = userinfoAnswerSchema(variant)
    const claims = userClaims(variant).ofUser(ada)
    for (const [name, value] of Object.entries(claims)) {
      t.ok(Object.hasOwn(schema.properties, name), `${name} is in the schema`)
      t.equal(typeof value, schema.properties[name].type, `${name} is a ${schema.properties[name].type as string}`)
    }
  })
}

t.test('preferred_username only where usernames exist (the cookie variant)', async (t) => {
  t.notOk(Object.hasOwn(userinfoAnswerSchema('header').properties, 'preferred_username'))
  t.ok(Object.hasOwn(userinfoAnswerSchema('cookie').properties, 'preferred_username'))
  t.equal(userClaims('header').ofUser(ada).preferred_username, undefined)
})

t.test('keptForScopes: the answer of forScopes, frozen, one object for a kept user and a scope set; a user read again is answered anew', async (t) => {
  const claims = userClaims('header')
  const shown = { id: 7, email: 'ada@example.com', firstName: 'Ada', lastName: 'Lovelace', username: null }
  const kept = { shown, emailVerified: false }
  const scopes = new Set(['openid', 'email'])
  const answer = claims.keptForScopes(kept, scopes)
  t.same(answer, claims.forScopes(kept, scopes))
  t.same(answer, { sub: '7', email: 'ada@example.com', email_verified: false })
  t.ok(Object.isFrozen(answer))
  t.equal(claims.keptForScopes(kept, scopes), answer, 'the same object for the same user and scopes')
  t.not(claims.keptForScopes(kept, new Set(['openid'])), answer)
  t.same(claims.keptForScopes(kept, new Set(['openid'])), { sub: '7' })
  const verified = claims.keptForScopes({ shown, emailVerified: true }, scopes)
  t.equal(verified.email_verified, true, 'a user read again (a new kept user) is answered from what was read')
})
