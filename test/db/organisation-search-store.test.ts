import t from 'tap'
import { testStore } from '../fixtures/database.js'

t.test('the operators\' search finds organisations by name or slug ignoring case, in id order, a page at a time, with member counts', async (t) => {
  const store = await testStore(t)
  const owner = await store.createUser({ firstName: 'Ada', lastName: 'Lovelace', username: null, email: 'ada@example.com', passwordHash: null })
  const now = new Date()
  const acme = await store.createOrganisation({ name: 'Acme Rockets', slug: 'acme', ownerId: owner.id }, now)
  const globex = await store.createOrganisation({ name: 'Globex', slug: 'globex-corp', ownerId: owner.id }, now)
  const percent = await store.createOrganisation({ name: '100% Acme', slug: 'hundred', ownerId: owner.id }, now)

  t.same((await store.searchOrganisations({ limit: 10 })).map(org => org.id), [acme.id, globex.id, percent.id], 'no query: every one, in id order')
  t.match(await store.searchOrganisations({ query: 'ACME', limit: 10 }), [{ id: acme.id, name: 'Acme Rockets', slug: 'acme', memberCount: 1 }, { id: percent.id }])
  t.same((await store.searchOrganisations({ query: 'corp', limit: 10 })).map(org => org.id), [globex.id], 'by slug')
  t.same((await store.searchOrganisations({ query: '%', limit: 10 })).map(org => org.id), [percent.id], '% is taken literally')
  t.same((await store.searchOrganisations({ limit: 2 })).map(org => org.id), [acme.id, globex.id], 'a page')
  t.same((await store.searchOrganisations({ limit: 2, afterId: globex.id })).map(org => org.id), [percent.id], 'the next page')
  t.same(await store.searchOrganisations({ query: 'nothing-like-it', limit: 10 }), [])
})
