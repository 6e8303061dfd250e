import { test } from 'tap'
import { pinTickObjectShape } from '../../src/tick-object-shape.js'

// What the workaround needs from Node: a tick object handed to an async hook, built by the literal it
// keeps fast (symbol keys, then callback and args). On a Node where this fails, the pin is moot and the
// comment in src/tick-object-shape.ts is to be revisited.
test('start holds one of Node\'s nextTick objects, the same one for the life of the process', (t) => {
  const pinned = pinTickObjectShape() as Record<string | symbol, unknown> | undefined
  t.ok(pinned !== undefined, 'Node handed a TickObject to the hook')
  t.type(pinned?.callback, 'function', 'it is a tick: its callback')
  // Its own keys in the literal's order (an AsyncLocalStorage in the process, as the test runner's, adds one after them).
  t.same(Object.getOwnPropertySymbols(pinned).slice(0, 2).map(String), ['Symbol(async_id_symbol)', 'Symbol(trigger_async_id_symbol)'], 'with the two symbol keys of the literal kept fast')
  t.same(Object.keys(pinned ?? {}), ['callback', 'args'])
  t.equal(pinTickObjectShape(), pinned, 'a second call holds no other')
  t.end()
})
