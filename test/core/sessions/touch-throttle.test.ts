import t from 'tap'
import { TOUCH_INTERVAL_MS, TouchThrottle } from '../../../core/sessions/touch-throttle.js'

t.test('last_used_at is written at most once a minute per session', async (t) => {
  const throttle = new TouchThrottle()
  const start = 1_000_000
  t.ok(throttle.due('a', start), 'the first refresh writes')
  t.notOk(throttle.due('a', start + 1000), 'a refresh a second later does not')
  t.ok(throttle.due('b', start + 1000), 'another session is counted apart')
  t.notOk(throttle.due('a', start + TOUCH_INTERVAL_MS - 1))
  t.ok(throttle.due('a', start + TOUCH_INTERVAL_MS), 'a minute on, it writes again')
  t.notOk(throttle.due('b', start + TOUCH_INTERVAL_MS + 500), 'across the generation swap too')
  t.ok(throttle.due('b', start + 3 * TOUCH_INTERVAL_MS), 'an entry long gone is due')
})
