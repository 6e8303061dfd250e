import type { Server } from 'node:http'
import { setFlagsFromString } from 'node:v8'
import closeWithGrace from 'close-with-grace'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import { describeDatabase } from '../db/open.js'
import app, { developmentLogStream, serverOptions } from './app.js'
import { ConfigError, loadConfig, type Config } from '../core/config.js'
import { listenMetrics } from './metrics-listener.js'
import { pinTickObjectShape } from './tick-object-shape.js'

/**
 * Starts the service: loads the settings, builds the app, listens and wires
 * graceful shutdown. A plain function (no top-level await), so that the
 * single executable's CommonJS bundle can call it too (scripts/build-sea.mjs).
 */
export async function start (): Promise<void> {
  // V8 grows its heap to suit the allocation rate under load, and gives the memory back slowly: the
  // service's RSS after a load went from 90 MB at ready to over 200 MB (issue 23: at most 150). A
  // heap that grows by a quarter at a time (V8 picks up to four times under load) keeps it lower
  // for a little more collection (bench/results/notes.md). Set before the heap has grown.
  setFlagsFromString('--heap-growing-percent=25')
  // A full GC at a quiet moment would otherwise leave every later process.nextTick on V8's slow path.
  pinTickObjectShape()

  // The only place that listens. A bad setting stops the start with one line naming it.
  let config: Config
  try {
    config = loadConfig()
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error
    console.error(error.message)
    return process.exit(1)
  }

  const server = Fastify(serverOptions(config, { logStream: config.nodeEnv === 'development' ? await developmentLogStream() : undefined }))
  // Fastify closes the connections idle when shutdown starts; a request already in flight on a
  // keep-alive connection would hold the close up until the keep-alive timeout. Tell its client
  // the connection ends with this answer, and reap connections as they fall idle.
  let closing = false
  server.addHook('preClose', async () => { closing = true })
  // Synchronous: an async hook would cost every answer a promise.
  server.addHook('onSend', (request, reply, payload, done) => {
    if (closing && request.raw.httpVersionMajor === 1) reply.header('connection', 'close')
    done(null, payload)
  })
  try {
    await server.register(fp(app), { config })
    await server.ready()
  } catch (error) {
    server.log.fatal({ err: error }, `start failed: ${(error as Error).message}`)
    return process.exit(1)
  }

  let metricsServer: Server | undefined
  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err !== undefined) server.log.error({ err }, 'shutting down after an error')
    else server.log.info({ signal }, 'shutting down')
    metricsServer?.closeAllConnections()
    metricsServer?.close()
    const reaper = setInterval(() => server.server.closeIdleConnections(), 100)
    await server.close()
    clearInterval(reaper)
    server.log.info('shut down: no request in flight, store closed')
  })

  try {
    await server.listen({ host: config.host, port: config.port })
  } catch (error) {
    // Port taken, address not ours: say so in one line rather than a stack.
    server.log.fatal({ err: error }, `cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`)
    await server.close()
    return process.exit(1)
  }
  if (config.metrics.port !== undefined) {
    try {
      const metrics = await listenMetrics(server, { host: config.metrics.host, port: config.metrics.port })
      metricsServer = metrics.server
      server.log.info(`metrics listening at ${metrics.url}`)
    } catch (error) {
      server.log.fatal({ err: error }, `cannot listen on METRICS_HOST ${config.metrics.host}:${config.metrics.port}: ${(error as Error).message}`)
      await server.close()
      return process.exit(1)
    }
  }
  server.log.info({ variant: config.variant, database: describeDatabase(config.databaseUrl) }, 'account service ready')
}
