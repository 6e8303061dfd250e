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
