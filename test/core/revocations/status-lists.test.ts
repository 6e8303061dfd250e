import { inflateSync } from 'node:zlib'
import t from 'tap'
import { RevocationSet } from '../../../core/revocations/revocation-set.js'
import { STATUS_LIST_SIZE } from '../../../core/revocations/status-list.js'
import { createStatusLists } from '../../../core/revocations/status-lists.js'
import { testClock } from '../../fixtures/clock.js'

const PUBLIC_URL = 'https://accounts.example.com'

/** Status lists over a revocation set of their own; the "signature" is the payload as JSON, so a test reads it back. */
function statusLists (clock = testClock()) {
  const set = new RevocationSet(60_000)
  let seq = 0
  const revoke = (statusIndex: number) => {
    seq += 1
    set.apply([{ seq, sessionId: `s${seq}`, userId: 1, statusIndex, userDeleted: false, revokedAt: new Date(clock.now()) }], clock.now())
  }
  const lists = createStatusLists({ revocations: { set }, accessTokens: { signStatusList: payload => JSON.stringify(payload) }, clock }, { publicUrl: PUBLIC_URL, ttlSeconds: 30 })
  return { lists, revoke, clock }
}

/** The list's payload and the bit of each of `indexes` (of that list). */
function read (jwt: string, indexes: number[]): { payload: Record<string, any>, bits: number[] } {
  const payload = JSON.parse(jwt)
  const bytes = inflateSync(Buffer.from(payload.status_list.lst, 'base64url'))
  return { payload, bits: indexes.map(index => (bytes[index >> 3] >> (index & 7)) & 1) }
}

t.test('a status index\'s claim names its list under PUBLIC_URL and its bit there', async (t) => {
  const { lists } = statusLists()
  t.same(lists.claim(5), { status_list: { idx: 5, uri: `${PUBLIC_URL}/statuslists/1` } })
  t.same(lists.claim(STATUS_LIST_SIZE + 5), { status_list: { idx: 5, uri: `${PUBLIC_URL}/statuslists/2` } })
})

t.test('a signed list sets the bits of revoked sessions in it, and only those', async (t) => {
  const { lists, revoke, clock } = statusLists()
  revoke(3)
  revoke(STATUS_LIST_SIZE + 4)
  const first = read(lists.signed(1).jwt, [3, 4])
  t.same(first.bits, [1, 0])
  t.match(first.payload, { sub: `${PUBLIC_URL}/statuslists/1`, iat: Math.floor(clock.now() / 1000), ttl: 30, status_list: { bits: 1 } })
  t.equal(first.payload.exp - first.payload.iat, 300, 'valid a few minutes')
  t.same(read(lists.signed(2).jwt, [3, 4]).bits, [0, 1], 'list 2 has its own bits')
})

t.test('after a revocation a list is signed again, at most once a second', async (t) => {
  const { lists, revoke, clock } = statusLists()
  const first = lists.signed(1)
  t.equal(lists.signed(1), first, 'nothing changed: the same signed list')
  revoke(7)
  clock.advance(999)
  t.equal(lists.signed(1), first, 'within the second of the last signature')
  clock.advance(1)
  const second = lists.signed(1)
  t.not(second.etag, first.etag)
  t.same(read(second.jwt, [7]).bits, [1])
})

t.test('an unchanged list is signed again after a minute, so that its iat stays recent', async (t) => {
  const { lists, clock } = statusLists()
  const first = lists.signed(1)
  clock.advance(59_999)
  t.equal(lists.signed(1), first)
  clock.advance(1)
  const later = lists.signed(1)
  t.not(later, first)
  t.equal(read(later.jwt, []).payload.iat, Math.floor(clock.now() / 1000))
})
