import closeWithGrace from 'close-with-grace'
import Fastify from 'fastify'
import fp from 'fastify-plugin'
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

await server.listen({ host: config.host, port: config.port })
server.log.info({ variant: config.variant, database: config.databaseUrl }, 'account service ready')
