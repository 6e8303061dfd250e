import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { FastifyInstance } from 'fastify'

/**
 * GET /metrics on a listener of its own (METRICS_PORT on METRICS_HOST,
 * 127.0.0.1 by default), so that the scraper reaches it on a private address
 * and the public listener never serves it. A bare node:http server: one route,
 * no hooks of the API (rate limits, CSP) in its way.
 */
export async function listenMetrics (app: FastifyInstance, { host, port }: { host: string, port: number }): Promise<{ server: Server, url: string }> {
  const server = createServer((request, response) => {
    const path = request.url?.split('?')[0]
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n')
      return
    }
    app.metricsText().then(
      ({ contentType, body }) => { response.writeHead(200, { 'content-type': contentType }).end(body) },
      (error: unknown) => {
        app.log.error({ err: error }, 'metrics not rendered')
        response.writeHead(500, { 'content-type': 'text/plain' }).end('metrics unavailable\n')
      })
  })
  server.listen(port, host)
  await once(server, 'listening')
  const address = server.address() as AddressInfo
  const shownHost = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return { server, url: `http://${shownHost}:${address.port}/metrics` }
}
