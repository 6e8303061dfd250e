import { writeFileSync } from 'node:fs'
import { createUserCache } from '../core/users/user-cache.js'
import type { UserRecord } from '../db/store.js'

/*
 * npm run bench:user-cache: what the user cache of GET /users/:id costs in memory, filled from a
 * store of 1,000,000 users shaped like the bench's (bench/seed.ts): V8's heap before and after
 * reading every user once, with USER_CACHE_MAX at its default and at a million (every user kept).
 * Run with --expose-gc, so that each figure is the heap after a full collection.
 */
const USERS = 1_000_000
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error('run with node --expose-gc')

function user (id: number): UserRecord {
  return {
    id,
    firstName: 'Bench',
    lastName: `User ${id}`,
    username: `user${id}`,
    email: `user${id}@bench.example`,
    passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$aGFzaGhhc2hoYXNoaGFzaGhhc2hoYXNoaGFzaGhhc2g',
    emailVerified: false,
    emailVerifiedAt: null,
    createdAt: new Date(),
    updatedAt: new Date(),
    role: 'user',
    disabledAt: null,
    lastLoginAt: null
  }
}

async function heapAfterFilling (max: number): Promise<{ max: number, kept: number, heapMb: number, perUserBytes: number }> {
  gc?.()
  const before = process.memoryUsage().heapUsed
  const cache = createUserCache({
    store: { findUserById: async (id) => user(id) },
    revocations: { isFresh: () => true, onUserChange: () => {} }
  }, { max })
  for (let id = 1; id <= USERS; id++) await cache.find(id)
  gc?.()
  const grown = process.memoryUsage().heapUsed - before
  const result = { max, kept: cache.size, heapMb: Math.round(grown / 1048576), perUserBytes: Math.round(grown / Math.max(cache.size, 1)) }
  if (cache.peek(USERS) === undefined) throw new Error('the last user read is not kept')
  return result
}

const results = [await heapAfterFilling(100_000), await heapAfterFilling(USERS)]
for (const { max, kept, heapMb, perUserBytes } of results) {
  console.log(`USER_CACHE_MAX=${max.toLocaleString('en')}: ${kept.toLocaleString('en')} users kept of ${USERS.toLocaleString('en')} read, ${heapMb} MB of heap, ${perUserBytes} bytes a user`)
}
writeFileSync(new URL('./results/user-cache.json', import.meta.url), JSON.stringify({ date: new Date().toISOString(), node: process.version, users: USERS, results }, null, 2) + '\n')
