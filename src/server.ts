import closeWithGrace from 'close-with-grace'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
import { describeDatabase } from '../db/open.js'
import app, { serverOptions } from './app.js'
import { ConfigError, loadConfig, type Config } from './config.js'

// The only place that listens. A bad setting stops the start with one line naming it.
let config: Config
try {
  config = loadConfig()
} catch (error) {
  if (!(error instanceof ConfigError)) throw error
  console.error(error.message)
  process.exit(1)
}

const server = Fastify(serverOptions(config))
try {
  await server.register(fp(app), { config })
  await server.ready()
} catch (error) {
  server.log.fatal({ err: error }, `start failed: ${(error as Error).message}`)
  process.exit(1)
}

closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
  if (err !== undefined) server.log.error({ err }, 'shutting down after an error')
  else server.log.info({ signal }, 'shutting down')
  await server.close()
})

try {
  await server.listen({ host: config.host, port: config.port })
} catch (error) {
  // Port taken, address not ours: say so in one line rather than a stack.
  server.log.fatal({ err: error }, `cannot listen on ${config.host}:${config.port}: ${(error as Error).message}`)
  await server.close()
  process.exit(1)
}
server.log.info({ variant: config.variant, database: describeDatabase(config.databaseUrl) }, 'account service ready')
