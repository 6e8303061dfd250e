// Plain JavaScript, as hello-world.mjs: the floor of any refresh.
import { generateKeyPairSync, randomUUID } from 'node:crypto'
import Fastify from 'fastify'
import { createSigner } from 'fast-jwt'

// Hello-world that signs one access token a request as the service signs it: fast-jwt's signer, made
// once, over a new Ed25519 key (the service's default algorithm), with the service's claims (sub, sid,
// the status-list entry, iss, aud, iat, exp) and a kid. No store, no verification, no logger: a refresh
// does all of this and more, so its ratio to hello-world cannot pass this one's.
const { privateKey } = generateKeyPairSync('ed25519')
const origin = 'http://localhost'
const sign = createSigner({
  key: privateKey.export({ format: 'pem', type: 'pkcs8' }),
  algorithm: 'EdDSA',
  kid: 'kYhj66LHFd5pM2EsaIGupSj215h8BFsm5Q4n2FgZfzw',
  iss: origin,
  aud: origin,
  expiresIn: 15 * 60 * 1000
})
const sessionId = randomUUID()
let index = 0

const server = Fastify({ logger: false })
server.post('/', async () => ({
  accessToken: sign({ sub: '1', sid: sessionId, status: { status_list: { idx: ++index % 1000, uri: `${origin}/statuslists/1` } } })
}))
await server.listen({ host: '127.0.0.1', port: 0 })
const address = server.server.address()
if (address !== null && typeof address === 'object') process.send?.({ port: address.port })
process.once('SIGTERM', () => { server.close().then(() => process.exit(0)) })
