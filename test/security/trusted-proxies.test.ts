import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build } from '../fixtures/build.js'
import { assertError } from '../fixtures/assertions.js'
import { registerUser } from '../fixtures/factories.js'

// Finding 3: with every hop trusted, the client-chosen left part of X-Forwarded-For became request.ip,
// and each per-address limit could be dodged by writing a new address there.

const limits = (env: Record<string, string>) => ({ env: { RATE_LIMIT_ENABLED: 'true', RATE_LIMIT_LOGIN_MAX: '3', ...env } })

async function login (server: FastifyInstance, email: string, password: string, remoteAddress: string, forwardedFor?: string) {
  return await server.inject({
    method: 'POST',
    url: '/auth/login',
    payload: { email, password },
    remoteAddress,
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor }
  })
}

t.test('TRUST_PROXY=1: a client rotating the left part of X-Forwarded-For still hits the per-address login limit', async (t) => {
  const server = await build(t, limits({ TRUST_PROXY: '1' }))
  const user = await registerUser(server, 'cookie')
  // The proxy (10.0.0.5) appends the address it saw (203.0.113.7) to whatever the client sent.
  for (let attempt = 0; attempt < 3; attempt++) {
    const response = await login(server, user.email, user.password, '10.0.0.5', `198.51.100.${attempt}, 203.0.113.7`)
    t.equal(response.statusCode, 200, `login ${attempt + 1} of 3`)
  }
  assertError(t, await login(server, user.email, user.password, '10.0.0.5', '198.51.100.99, 203.0.113.7'), 429, 'RATE_LIMITED')
  t.equal((await login(server, user.email, user.password, '10.0.0.5', '198.51.100.1, 203.0.113.8')).statusCode, 200,
    'another client behind the same proxy is counted apart')
})

t.test('TRUST_PROXY as a list of proxies: only those hops are skipped; a direct client\'s header is ignored', async (t) => {
  const server = await build(t, limits({ TRUST_PROXY: '10.0.0.0/8, 192.168.1.1' }))
  const user = await registerUser(server, 'cookie')
  // Two trusted proxies in a row; the client wrote its own entries on the left.
  for (let attempt = 0; attempt < 3; attempt++) {
    t.equal((await login(server, user.email, user.password, '192.168.1.1', `198.51.100.${attempt}, 203.0.113.9, 10.1.1.1`)).statusCode, 200)
  }
  assertError(t, await login(server, user.email, user.password, '192.168.1.1', '198.51.100.50, 203.0.113.9, 10.1.1.1'), 429, 'RATE_LIMITED')
  // A client reaching the service directly cannot pass for someone else with the header.
  for (let attempt = 0; attempt < 3; attempt++) {
    t.equal((await login(server, user.email, user.password, '198.51.100.77', `203.0.113.${100 + attempt}`)).statusCode, 200)
  }
  // Counted by its own address, whatever it forwards.
  assertError(t, await login(server, user.email, user.password, '198.51.100.77', '203.0.113.200'), 429, 'RATE_LIMITED')
})

t.test('two IPv6 addresses in one /64 share a limit; another /64 does not', async (t) => {
  const server = await build(t, limits({ RATE_LIMIT_RECOVERY_MAX: '2', RATE_LIMIT_RECOVERY_ACCOUNT_MAX: '100' }))
  const user = await registerUser(server, 'cookie')
  t.equal((await login(server, user.email, user.password, '2001:db8:1:2::1')).statusCode, 200)
  t.equal((await login(server, user.email, user.password, '2001:db8:1:2:aaaa::2')).statusCode, 200)
  t.equal((await login(server, user.email, user.password, '2001:db8:1:2:ffff:ffff:ffff:ffff')).statusCode, 200)
  assertError(t, await login(server, user.email, user.password, '2001:0db8:0001:0002::9'), 429, 'RATE_LIMITED') // the login limit counts the /64
  t.equal((await login(server, user.email, user.password, '2001:db8:1:3::1')).statusCode, 200, 'the next /64 is another client')
  t.equal((await login(server, user.email, user.password, '::ffff:203.0.113.1')).statusCode, 200, 'an IPv4-mapped address is its IPv4 address')

  // The route-level per-address limits (routes/rate-limits.ts) count the same way.
  const forgot = (remoteAddress: string, email: string) =>
    server.inject({ method: 'POST', url: '/auth/forgot-password', payload: { email }, remoteAddress })
  t.equal((await forgot('2001:db8:5:6::1', 'a@example.com')).statusCode, 202)
  t.equal((await forgot('2001:db8:5:6::2', 'b@example.com')).statusCode, 202)
  assertError(t, await forgot('2001:db8:5:6:1:2:3:4', 'c@example.com'), 429, 'RATE_LIMITED') // forgot-password counts the /64
  t.equal((await forgot('2001:db8:5:7::1', 'd@example.com')).statusCode, 202)
})
