import t from 'tap'
import { loadConfig } from '../../src/config.js'
import { build } from '../fixtures/build.js'

t.test('DEMO defaults to on in development only', async (t) => {
  t.equal(loadConfig({ NODE_ENV: 'development' }).demo, true)
  t.equal(loadConfig({ NODE_ENV: 'production' }).demo, false)
  t.equal(loadConfig({ NODE_ENV: 'production', DEMO: 'true' }).demo, true)
  t.equal(loadConfig({ NODE_ENV: 'development', DEMO: 'false' }).demo, false)
})

t.test('with DEMO=true the cookie variant serves the page, its script and style from /demo/', async (t) => {
  const server = await build(t, { env: { DEMO: 'true' } })
  const bare = await server.inject('/demo')
  t.equal(bare.statusCode, 302)
  t.equal(bare.headers.location, '/demo/')
  const page = await server.inject('/demo/')
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /^text\/html/)
  t.match(page.body, /<script src="demo\.js" defer><\/script>/)
  t.notMatch(page.body, /<script>|<style>| on[a-z]+="/, 'no inline script, style or handler (a strict CSP allows the page)')
  t.match((await server.inject('/demo/demo.js')).headers['content-type'], /^text\/javascript/)
  t.match((await server.inject('/demo/demo.css')).headers['content-type'], /^text\/css/)
})

t.test('the demo follows the mount prefix of the cookie variant, and the header variant has none', async (t) => {
  const server = await build(t, { env: { DEMO: 'true' }, mounts: [{ variant: 'header', prefix: '/v1' }, { variant: 'cookie', prefix: '/v2' }] })
  t.equal((await server.inject('/v2/demo/')).statusCode, 200)
  t.equal((await server.inject('/v2/demo')).headers.location, '/v2/demo/')
  t.equal((await server.inject('/v1/demo/')).statusCode, 404)
})

t.test('without DEMO the page is not served', async (t) => {
  const server = await build(t)
  const response = await server.inject('/demo/')
  t.equal(response.statusCode, 404)
  t.equal(response.json().code, 'NOT_FOUND')
})
