import { createHook } from 'node:async_hooks'

let pinned: object | undefined

/**
 * Keeps one of Node's `process.nextTick` objects alive for the life of the process, so that V8 never
 * collects their shape (issue 23; bench/results/notes.md).
 *
 * Node builds each tick as an object literal with two symbol keys. V8 caches how to add those keys at
 * that one literal, and remembers only one shape there: once it sees another, it gives up for good
 * and adds them through the runtime. That happens after any full GC at a quiet moment, when no tick
 * object is alive. The GC collects the shape, the next tick makes a new one, and that one literal is
 * slow from then on. Every request makes about ten ticks.
 * - It happened at random in the bench's setup, and deterministically after one registration. Then
 *   nextTick took 9% to 10% of a GET's CPU (its self time in the CPU profile), against 0.4% in hello-world.
 * - It makes a bare Fastify hello-world 15% to 20% slower, after a `gc()` at idle.
 * - With one tick object held, the shape lives, and the literal stays on its fast path.
 *
 * The object is caught the only way Node hands one out: an async hook's `init`. The hook is enabled
 * for a single `nextTick` at start, then disabled. Returns the object held, or undefined on a Node
 * that no longer makes tick objects (the workaround is then moot).
 */
export function pinTickObjectShape (): object | undefined {
  if (pinned !== undefined) return pinned
  const hook = createHook({
    init (_asyncId, type, _triggerAsyncId, resource) {
      if (type === 'TickObject') pinned ??= resource as object
    }
  })
  hook.enable()
  try {
    process.nextTick(() => {})
  } finally {
    hook.disable()
  }
  return pinned
}
