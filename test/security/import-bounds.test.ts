import t from 'tap'
import { adminRequest, adminSession } from '../fixtures/admin.js'
import { build } from '../fixtures/build.js'
import { credentials } from '../fixtures/factories.js'

/*
 * Finding 12 of the third review: an import kept every skipped line and answered them all: 200,000 bad
 * lines made an 8 MB answer and 85 MB more RSS, and a 25 MB body of them would exhaust the heap. The
 * answer now counts the skipped lines and lists the first 100 (in line order), saying when more were
 * left out. And (16) the `users_imported` event recorded counts only: it now says what an operator needs
 * to follow up, bounded as well.
 */

const BAD_LINES = 200_000

t.test('200,000 bad lines answer a count and the first 100, and the audit trail says what happened', async (t) => {
  const server = await build(t, { variant: 'header' })
  const admin = await adminSession(server, 'header')
  const good = JSON.stringify({ email: 'kept@example.test', first_name: 'Kept', last_name: 'Line' })
  // A good line in the middle; every other line is not JSON, and one names a field 60,000 characters long.
  const lines = Array.from({ length: BAD_LINES }, (_, index) => index === 1000 ? good : 'x')
  lines[1] = JSON.stringify({ email: 'long@example.test', first_name: 'A', last_name: 'B', ['f'.repeat(60_000)]: 1 })
  const session = credentials('header', admin)
  const answer = await server.inject({
    method: 'POST',
    url: '/admin/users/import',
    payload: lines.join('\n'),
    ...session,
    headers: { ...session.headers, 'content-type': 'application/x-ndjson' }
  })
  t.equal(answer.statusCode, 200)
  t.ok(answer.body.length < 16 * 1024, `the answer stays small (${answer.body.length} bytes)`)
  const summary = answer.json()
  t.equal(summary.imported, 1)
  t.equal(summary.skipped_count, BAD_LINES - 1, 'every skipped line is counted')
  t.equal(summary.skipped.length, 100, 'the first 100 are listed')
  t.equal(summary.skipped_truncated, true, 'and the answer says more were left out')
  t.same(summary.skipped.slice(0, 2).map((entry: { line: number }) => entry.line), [1, 2], 'in line order')
  t.match(summary.skipped[1].reason, /^unknown field f+…$/, 'a reason quoting the body is cut short')
  t.ok(summary.skipped[1].reason.length <= 200)

  const trail = await adminRequest(server, 'header', admin, 'GET', '/admin/events?type=users_imported')
  const [event] = trail.json().events
  t.match(event.detail, { format: 'ndjson', imported: 1, skipped: BAD_LINES - 1, skipped_truncated: true })
  t.same(event.detail.skipped_lines.slice(0, 2).map((entry: { line: number }) => entry.line), [1, 2], 'the first skipped lines with their reasons')
  t.ok(JSON.stringify(event.detail).length < 4096, 'bounded')
})

t.test('a short import lists every skipped line and says nothing was left out', async (t) => {
  const server = await build(t, { variant: 'cookie' })
  const admin = await adminSession(server, 'cookie')
  const answer = await adminRequest(server, 'cookie', admin, 'POST', '/admin/users/import', [{ email: 'a@example.test', first_name: 'A', last_name: 'B', username: 'a_b' }, 'not a user'])
  t.equal(answer.statusCode, 200)
  t.same(answer.json(), { imported: 1, skipped: [{ line: 2, reason: 'not a JSON object' }], skipped_count: 1, skipped_truncated: false })
  const trail = await adminRequest(server, 'cookie', admin, 'GET', '/admin/events?type=users_imported')
  t.match(trail.json().events[0].detail, { format: 'json', imported: 1, skipped: 1, skipped_lines: [{ line: 2, reason: 'not a JSON object' }], skipped_truncated: false })
})
