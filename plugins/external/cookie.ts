import fastifyCookie from '@fastify/cookie'
import fp from 'fastify-plugin'

/** Parses the Cookie header into request.cookies and adds reply.setCookie / clearCookie. */
export default fp(async (fastify) => {
  await fastify.register(fastifyCookie)
}, { name: 'cookie' })
