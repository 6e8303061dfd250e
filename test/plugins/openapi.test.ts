import SwaggerParser from '@apidevtools/swagger-parser'
import Fastify, { type RouteOptions } from 'fastify'
import fp from 'fastify-plugin'
import t, { type Test } from 'tap'
import app, { serverOptions } from '../../src/app.js'
import { testConfig } from '../fixtures/build.js'

// Every route the service registers, with the statuses its schema declares, to hold the document against.
async function buildRecordingRoutes (t: Test) {
  const config = testConfig()
  const server = Fastify(serverOptions(config))
  const routes: RouteOptions[] = []
  server.addHook('onRoute', (route) => { routes.push(route) })
  await server.register(fp(app), { config, mounts: [{ variant: 'header', prefix: '/v1' }, { variant: 'cookie', prefix: '/v2' }] })
  await server.ready()
  t.teardown(() => server.close())
  return { server, routes }
}

type Operation = { tags?: string[], responses: Record<string, { description: string, content?: Record<string, { schema: Record<string, unknown> }> }> }

t.test('GET /openapi.json is a valid OpenAPI 3.1 document with every route and its error responses', async (t) => {
  const { server, routes } = await buildRecordingRoutes(t)
  const response = await server.inject('/openapi.json')
  t.equal(response.statusCode, 200)
  t.match(response.headers['content-type'], /^application\/json/)
  const document = response.json()
  t.equal(document.openapi, '3.1.0')
  t.equal(document.info.title, 'account-service')
  // The validator dereferences in place: give it a copy.
  await t.resolves(SwaggerParser.validate(structuredClone(document)), 'the validator accepts it')

  const documented = routes.filter(route => route.schema?.hide !== true && route.method !== 'HEAD')
  t.ok(documented.length >= 12, `${documented.length} routes to document`)
  for (const route of documented) {
    const path = route.url.replace(/:(\w+)/g, '{$1}')
    for (const method of [route.method].flat()) {
      const operation: Operation | undefined = document.paths[path]?.[method.toLowerCase()]
      if (operation === undefined) {
        t.fail(`${method} ${path} is missing from the document`)
        continue
      }
      const declared = Object.keys(route.schema?.response as object ?? {}).sort()
      t.same(Object.keys(operation.responses).sort(), declared, `${method} ${path}: every declared status`)
      for (const status of declared.filter(status => Number(status) >= 400)) {
        const error = operation.responses[status]
        t.not(error.description, 'Default Response', `${method} ${path} ${status} is described`)
        t.same(error.content?.['application/json'].schema.required, ['statusCode', 'code', 'error', 'message'], `${method} ${path} ${status} has the error shape`)
      }
    }
  }
})

t.test('the document tells the mounted variants apart and leaves out its own routes', async (t) => {
  const { server } = await buildRecordingRoutes(t)
  const { paths } = (await server.inject('/openapi.json')).json()
  t.same(paths['/v1/auth/login'].post.tags, ['header variant (A)'])
  t.same(paths['/v2/auth/login'].post.tags, ['cookie variant (B)'])
  t.ok(paths['/v1/auth/auth-me'], 'auth-me of the header variant')
  t.notOk(paths['/v2/auth/auth-me'], 'no auth-me in the cookie variant')
  t.ok(paths['/v2/users/{userId}'].patch, 'PATCH of the cookie variant')
  t.notOk(paths['/v1/users/{userId}'].patch, 'no PATCH in the header variant')
  t.same(Object.keys(paths['/v2/users/{userId}'].patch.responses).sort(), ['204', '400', '401', '403', '404', '409', '413', '415', '429', '500', '503'])
  const own = Object.keys(paths).filter(path => path.startsWith('/docs') || path === '/openapi.json')
  t.same(own, [], 'no /docs or /openapi.json in the document')
})

t.test('/docs serves Swagger UI with its assets from our own origin', async (t) => {
  const { server } = await buildRecordingRoutes(t)
  const page = await server.inject('/docs/')
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /^text\/html/)
  const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map(match => match[1])
  t.ok(assets.length > 0)
  for (const asset of assets) t.notMatch(asset, /^(https?:)?\/\//, `${asset} is same-origin`)
  const script = assets.find(asset => asset.endsWith('.js'))
  t.ok(script)
  const served = await server.inject(new URL(script as string, 'http://localhost/docs/').pathname)
  t.equal(served.statusCode, 200)
  const initializer = await server.inject('/docs/static/swagger-initializer.js')
  t.equal(initializer.statusCode, 200)
})

type Security = Array<Record<string, string[]>>

/** The operations of the mounted variants (/v1 header, /v2 cookie), with their `security`. */
function apiOperations (paths: Record<string, Record<string, { security?: Security }>>) {
  return Object.entries(paths)
    .filter(([path]) => path.startsWith('/v1/') || path.startsWith('/v2/'))
    .flatMap(([path, operations]) => Object.entries(operations).map(([method, operation]) => ({ path, method, security: operation.security })))
}

t.test('the document defines how tokens travel, and each operation says which it needs', async (t) => {
  const { server } = await buildRecordingRoutes(t)
  const { components, paths } = (await server.inject('/openapi.json')).json()
  t.match(components.securitySchemes, {
    bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
    refreshTokenHeader: { type: 'apiKey', in: 'header', name: 'X-Refresh-Token' },
    accessTokenCookie: { type: 'apiKey', in: 'cookie', name: 'accessToken' },
    refreshTokenCookie: { type: 'apiKey', in: 'cookie', name: 'refreshToken' }
  })
  t.same(paths['/v1/auth/login'].post.security, [], 'login takes no token')
  t.same(paths['/v2/auth/forgot-password'].post.security, [])
  t.same(paths['/v1/users/{userId}'].get.security, [{ bearerAuth: [] }])
  t.same(paths['/v2/users/{userId}'].patch.security, [{ accessTokenCookie: [] }])
  t.same(paths['/v1/auth/sessions'].get.security, [{ bearerAuth: [] }])
  t.same(paths['/v1/auth/refresh-token'].post.security, [{ bearerAuth: [], refreshTokenHeader: [] }], 'variant A refresh: both headers together')
  t.same(paths['/v1/auth/auth-me'].post.security, [{ bearerAuth: [], refreshTokenHeader: [] }])
  t.same(paths['/v2/auth/refresh-token'].post.security, [{ refreshTokenCookie: [] }])
  t.same(paths['/v2/auth/logout'].post.security, [{ refreshTokenCookie: [] }, {}], 'logout: the refresh token when there is one')

  const headerSchemes = new Set(['bearerAuth', 'refreshTokenHeader'])
  const cookieSchemes = new Set(['accessTokenCookie', 'refreshTokenCookie'])
  for (const { path, method, security } of apiOperations(paths)) {
    const label = `${method.toUpperCase()} ${path}`
    if (!Array.isArray(security)) {
      t.fail(`${label} has no security`)
      continue
    }
    const names = security.flatMap(requirement => Object.keys(requirement))
    const own = path.startsWith('/v1/') ? headerSchemes : cookieSchemes
    t.ok(names.every(name => own.has(name)), `${label} names only its variant's schemes: ${names.join(', ') || 'none'}`)
  }
})

t.test('an operation whose security requires a token answers 401 without one, and the others do not', async (t) => {
  const { server } = await buildRecordingRoutes(t)
  const { paths } = (await server.inject('/openapi.json')).json()
  for (const { path, method, security = [] } of apiOperations(paths)) {
    const url = path.replace('{userId}', '1').replace('{sessionId}', '00000000-0000-4000-8000-000000000000')
    const answer = await server.inject({ method: method.toUpperCase() as 'GET', url, ...(method === 'get' ? {} : { payload: {} }) })
    const required = security.length > 0 && security.every(requirement => Object.keys(requirement).length > 0)
    if (required) t.equal(answer.statusCode, 401, `${method.toUpperCase()} ${path} without credentials: ${answer.body}`)
    else t.not(answer.statusCode, 401, `${method.toUpperCase()} ${path} needs no credentials`)
  }
})
