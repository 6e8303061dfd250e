import t from 'tap'
import type { OrgRole } from '../../../db/store.js'
import { refusalToChangeRole, refusalToDelete, refusalToInvite, refusalToManage, refusalToRemove } from '../../../core/organisations/roles.js'
import { slugFromName, suffixedSlug } from '../../../core/organisations/slugs.js'
import { SLUG_PATTERN } from '../../../core/schemas/organisations.js'

const ROLES: OrgRole[] = ['owner', 'admin', 'member']
const allowed = (refusal: string | undefined) => refusal === undefined

t.test('a slug derived from a name is always a valid slug', async (t) => {
  const cases: Array<[string, string]> = [
    ['Acme Ltd', 'acme-ltd'], ['  Café Crème & Co  ', 'cafe-creme-co'], ['Ünïcödé GmbH', 'unicode-gmbh'], ['Q', 'q-org'],
    ['株式会社', 'org'], ['--a--b--', 'a-b'], ['x'.repeat(60), 'x'.repeat(40)], [`${'y'.repeat(39)} z`, 'y'.repeat(39)]
  ]
  for (const [name, slug] of cases) {
    t.equal(slugFromName(name), slug, name)
    t.match(slug, new RegExp(SLUG_PATTERN))
  }
  const suffixed = suffixedSlug('x'.repeat(40))
  t.match(suffixed, new RegExp(SLUG_PATTERN), 'a suffixed slug stays within 40')
  t.match(suffixed, /^x{35}-[a-z0-9]{4}$/)
  t.not(suffixedSlug('acme'), suffixedSlug('acme'), 'random')
})

t.test('managing (rename, invitations): owner and admin', async (t) => {
  t.same(ROLES.map((role) => allowed(refusalToManage(role))), [true, true, false])
  t.same(ROLES.map((role) => allowed(refusalToDelete(role))), [true, false, false], 'deleting: the owner only')
})

t.test('inviting: owner and admin, only an owner invites an owner', async (t) => {
  t.same(ROLES.map((actor) => ROLES.map((role) => allowed(refusalToInvite(actor, role)))), [
    [true, true, true],
    [false, true, true],
    [false, false, false]
  ])
})

t.test('changing a role: only an owner gives or takes the owner role', async (t) => {
  const table = (actor: OrgRole) => ROLES.map((current) => ROLES.map((next) => allowed(refusalToChangeRole(actor, current, next))))
  t.same(table('owner'), [[true, true, true], [true, true, true], [true, true, true]])
  t.same(table('admin'), [[false, false, false], [false, true, true], [false, true, true]])
  t.same(table('member'), [[false, false, false], [false, false, false], [false, false, false]])
})

t.test('removing: anyone removes itself; an admin removes admins and members; only an owner removes an owner', async (t) => {
  for (const actor of ROLES) t.ok(allowed(refusalToRemove(actor, actor, true)), `${actor} leaves`)
  t.same(ROLES.map((target) => allowed(refusalToRemove('owner', target, false))), [true, true, true])
  t.same(ROLES.map((target) => allowed(refusalToRemove('admin', target, false))), [false, true, true])
  t.same(ROLES.map((target) => allowed(refusalToRemove('member', target, false))), [false, false, false])
})
