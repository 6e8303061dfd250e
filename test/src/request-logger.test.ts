import { Writable } from 'node:stream'
import Fastify, { type FastifyBaseLogger } from 'fastify'
import fp from 'fastify-plugin'
import t from 'tap'
import app, { serverOptions } from '../../src/app.js'
import { LazyRequestLogger, lazyRequestLoggers, RequestLines } from '../../src/request-logger.js'
import { CHEAP_HASH_PARAMETERS, testConfig } from '../fixtures/build.js'
import { loggedInUser } from '../fixtures/factories.js'

/** A pino logger (Fastify's own) writing JSON lines into `lines`, and a count of the children made from it. */
function recordingLogger (level: string) {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(JSON.parse(chunk.toString())); done() } })
  const logger = Fastify({ logger: { level, stream } }).log as FastifyBaseLogger & { isLevelEnabled (level: string): boolean }
  const made = { children: 0 }
  // pino's children inherit from their parent: the count must call pino's child on whichever logger it is asked of.
  const child = logger.child
  logger.child = function (this: FastifyBaseLogger, bindings, options) { made.children++; return child.call(this, bindings, options) }
  return { logger, lines, made }
}

t.test('below the level a request logger writes nothing and makes no child logger', async (t) => {
  const { logger, lines, made } = recordingLogger('warn')
  const requestLog = new LazyRequestLogger(logger, { reqId: 'req-1' }, {})
  requestLog.info({ req: { url: '/users/1' } }, 'incoming request')
  requestLog.debug('details')
  t.equal(made.children, 0, 'no pino child made')
  t.same(lines, [])
  t.equal(requestLog.level, 'warn', 'the level is the parent\'s')
})

t.test('a line at the level is written by one child made then, with the request id bound', async (t) => {
  const { logger, lines, made } = recordingLogger('warn')
  const requestLog = new LazyRequestLogger(logger, { reqId: 'req-2' }, {})
  requestLog.warn({ attempt: 1 }, 'first')
  requestLog.error('second')
  requestLog.info('below the level, still nothing')
  t.equal(made.children, 1, 'one child for every line of the request')
  t.match(lines, [{ level: 40, reqId: 'req-2', attempt: 1, msg: 'first' }, { level: 50, reqId: 'req-2', msg: 'second' }])
  t.equal(lines.length, 2)
  const nested = requestLog.child({ step: 'mail' })
  nested.warn('from a child of the request logger')
  t.match(lines[2], { reqId: 'req-2', step: 'mail', msg: 'from a child of the request logger' })
})

t.test('a route with a level of its own gets pino\'s child at once, at that level', async (t) => {
  const { logger, lines } = recordingLogger('warn')
  const server = Fastify()
  const requestLog = lazyRequestLoggers.call(server, logger, { reqId: 'req-3' }, { level: 'debug' }, {} as never)
  t.notOk(requestLog instanceof LazyRequestLogger)
  requestLog.debug('written at the route\'s level')
  t.match(lines, [{ level: 20, reqId: 'req-3' }])
})

t.test('the service at warn writes nothing for a request that goes well; at info each line of a request carries its id', async (t) => {
  for (const level of ['warn', 'info']) {
    const lines: Array<Record<string, unknown>> = []
    const stream = new Writable({ write (chunk, _encoding, done) { lines.push(JSON.parse(chunk.toString())); done() } })
    const config = testConfig({ API_VARIANT: 'header', LOG_LEVEL: level })
    const options = serverOptions(config)
    const server = Fastify({ ...options, logger: { ...(options.logger as object), stream } })
    await server.register(fp(app), { config, passwordHashParameters: CHEAP_HASH_PARAMETERS })
    t.teardown(() => server.close())
    const session = await loggedInUser(server, 'header')
    lines.length = 0
    const read = await server.inject({ method: 'GET', url: `/users/${session.user.id}`, headers: { authorization: `Bearer ${session.accessToken}`, 'x-request-id': 'trace-me-1' } })
    t.equal(read.statusCode, 200)
    if (level === 'warn') {
      t.same(lines, [], 'at warn: no line')
    } else {
      t.match(lines, [{ reqId: 'trace-me-1', msg: 'incoming request' }, { reqId: 'trace-me-1', msg: 'request completed' }], 'at info: the request\'s two lines, its id on each')
    }
  }
})

t.test('Fastify\'s lines of a request are built only where info is written; an errored request is logged at any level', async (t) => {
  const written: string[] = []
  const log = { info: (_object: object, message: string) => { written.push(`info ${message}`) }, error: (_object: object, message: string) => { written.push(`error ${message}`) } }
  const request = { log } as never
  const reply = { log, elapsedTime: 1 } as never
  for (const level of ['warn', 'error', 'silent']) {
    const lines = new RequestLines(level)
    lines.incomingRequest(request, reply)
    lines.requestCompleted(null, request, reply)
  }
  t.same(written, [], 'above info: none')
  new RequestLines('warn').requestCompleted(new Error('socket hang up'), request, reply)
  t.same(written, ['error request errored'], 'an errored request: at error, whatever the level')
  written.length = 0
  for (const level of ['info', 'debug', 'trace']) {
    const lines = new RequestLines(level)
    lines.incomingRequest(request, reply)
    lines.requestCompleted(null, request, reply)
  }
  t.same(written, Array(3).fill(['info incoming request', 'info request completed']).flat(), 'at info and below: both')
})
