import t from 'tap'
import { build } from '../fixtures/build.js'
import { loggedInUser, logIn, registerUser } from '../fixtures/factories.js'

t.test('one process serves both variants under two prefixes over one store', async (t) => {
  const server = await build(t, { mounts: [{ variant: 'header', prefix: '/v1' }, { variant: 'cookie', prefix: '/v2' }] })
  const cookieUser = await registerUser(server, 'cookie', {}, '/v2')

  const headerSession = await logIn(server, 'header', cookieUser, '/v1')
  t.notOk('username' in headerSession.response.json().user)
  const read = await server.inject({ method: 'GET', url: `/v1/users/${cookieUser.id}`, headers: { authorization: `Bearer ${headerSession.accessToken}` } })
  t.same(Object.keys(read.json()).sort(), ['email', 'first_name', 'id', 'last_name'])

  const cookieSession = await loggedInUser(server, 'cookie', {}, '/v2')
  const cookies = cookieSession.response.cookies as Array<{ name: string, path: string }>
  t.same(cookies.map(cookie => [cookie.name, cookie.path]), [['accessToken', '/v2'], ['refreshToken', '/v2/auth']], 'cookie paths follow the prefix')
  t.equal((await server.inject({ method: 'POST', url: '/v1/auth/auth-me', headers: { authorization: `Bearer ${headerSession.accessToken}`, 'x-refresh-token': `Bearer ${headerSession.refreshToken}` } })).statusCode, 200)
  t.equal((await server.inject({ method: 'POST', url: '/v2/auth/auth-me' })).statusCode, 404)
})
