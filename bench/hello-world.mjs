// Plain JavaScript, not TypeScript, so that its start time (the floor of the service's) needs no loader.
import Fastify from 'fastify'

// The ceiling: the same Node and Fastify, one route answering a small JSON object, no logger.
const server = Fastify({ logger: false })
server.get('/', async () => ({ hello: 'world' }))
await server.listen({ host: '127.0.0.1', port: 0 })
const address = server.server.address()
if (address !== null && typeof address === 'object') process.send?.({ port: address.port })
// An exit of its own on SIGTERM, so that a --cpu-prof profile (BENCH_PROFILE) is written.
process.once('SIGTERM', () => { server.close().then(() => process.exit(0)) })
