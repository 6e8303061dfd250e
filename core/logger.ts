/**
 * What the rules need of a logger: pino's methods (Fastify's logger is one), so that core/ does not
 * depend on Fastify. Tests pass `silentLogger` or one that records lines.
 */
export interface LogFn {
  (object: object, message?: string): void
  (message: string): void
}

export interface Logger {
  debug: LogFn
  info: LogFn
  warn: LogFn
  error: LogFn
}

export const silentLogger: Logger = { debug () {}, info () {}, warn () {}, error () {} }
