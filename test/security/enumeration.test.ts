import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { build } from '../fixtures/build.js'
import { registerUser } from '../fixtures/factories.js'

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

/**
 * Logs in 7 times with each of two bodies, alternating, and checks that both get the same 401 body and
 * (within noise) the same time. Generous bounds, because a loaded 2-core machine swings single requests by
 * several times: without the dummy hash the odd one out answers in well under a tenth of the time, which this still catches.
 */
async function answersAlike (t: Test, server: FastifyInstance, attempts: Record<string, { email: string, password: string }>): Promise<void> {
  const times = new Map(Object.keys(attempts).map(kind => [kind, [] as number[]]))
  const bodies = new Set<string>()
  for (let round = 0; round < 7; round++) {
    for (const [kind, payload] of Object.entries(attempts)) {
      const started = process.hrtime.bigint()
      const response = await server.inject({ method: 'POST', url: '/auth/login', payload })
      times.get(kind)!.push(Number(process.hrtime.bigint() - started) / 1e6)
      t.equal(response.statusCode, 401)
      bodies.add(response.body)
    }
  }
  t.equal(bodies.size, 1, `one body for both: ${[...bodies].join(' | ')}`)
  const [[first, firstTimes], [second, secondTimes]] = [...times]
  const ratio = median(firstTimes) / median(secondTimes)
  t.comment(`median ${first} ${median(firstTimes).toFixed(1)} ms, ${second} ${median(secondTimes).toFixed(1)} ms`)
  t.ok(ratio > 0.25 && ratio < 4, `the medians differ by a factor of ${ratio.toFixed(2)}`)
}

t.test('an unknown email and a wrong password give the same status, the same body and (within noise) the same time', async (t) => {
  const server = await build(t, { variant: 'cookie', hashing: 'stored' })
  const user = await registerUser(server, 'cookie')
  await answersAlike(t, server, {
    'unknown email': { email: 'nobody-here@example.com', password: 'some password 1' },
    'wrong password': { email: user.email, password: 'some password 1' }
  })
})

t.test('an account without a password (made by a provider sign-in) answers a password login as a wrong password, in the same time', async (t) => {
  const server = await build(t, { variant: 'header', hashing: 'stored' })
  const user = await registerUser(server, 'header')
  const passwordless = await registerUser(server, 'header')
  await server.store.setPasswordHash(passwordless.id, null, new Date())
  await answersAlike(t, server, {
    'no password': { email: passwordless.email, password: 'some password 1' },
    'wrong password': { email: user.email, password: 'some password 1' }
  })
})
