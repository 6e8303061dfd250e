import { LogController, type FastifyBaseLogger, type FastifyServerOptions } from 'fastify'

type ChildLoggerFactory = NonNullable<FastifyServerOptions['childLoggerFactory']>
type Bindings = Parameters<ChildLoggerFactory>[1]
type ChildLoggerOptions = Parameters<ChildLoggerFactory>[2]

/** Fastify's logger is pino: it tells whether a level is written. */
type ParentLogger = FastifyBaseLogger & { isLevelEnabled (level: string): boolean }

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace'

/**
 * A request's logger that makes pino's child logger (the request id bound, serialized and
 * redacted) only when the request writes a line. Fastify makes a child per request; at `warn`,
 * where a request that goes well writes nothing, that child was about 4% of an authenticated GET
 * (issue 23). A line at a level the parent writes is written by the child, made then and kept,
 * so it carries the request id exactly as before; a line below the level costs a comparison.
 */
export class LazyRequestLogger implements FastifyBaseLogger {
  private readonly parent: ParentLogger
  private readonly bindings: Bindings
  private readonly options: ChildLoggerOptions
  private made: FastifyBaseLogger | undefined

  constructor (parent: ParentLogger, bindings: Bindings, options: ChildLoggerOptions) {
    this.parent = parent
    this.bindings = bindings
    this.options = options
  }

  private logger (): FastifyBaseLogger {
    this.made ??= this.parent.child(this.bindings, this.options)
    return this.made
  }

  private write (level: Level, args: unknown[]): void {
    if (this.made !== undefined || this.parent.isLevelEnabled(level)) (this.logger()[level] as (...line: unknown[]) => void)(...args)
  }

  get level (): FastifyBaseLogger['level'] {
    return this.made?.level ?? this.parent.level
  }

  set level (level: FastifyBaseLogger['level']) {
    this.logger().level = level
  }

  // Methods on the prototype: a request's logger is one small object, no closures.
  fatal (...args: unknown[]): void { this.write('fatal', args) }
  error (...args: unknown[]): void { this.write('error', args) }
  warn (...args: unknown[]): void { this.write('warn', args) }
  info (...args: unknown[]): void { this.write('info', args) }
  debug (...args: unknown[]): void { this.write('debug', args) }
  trace (...args: unknown[]): void { this.write('trace', args) }
  silent (): void {}

  child (bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.logger().child(bindings, options)
  }
}

/**
 * Fastify's childLoggerFactory: a LazyRequestLogger, or pino's child at once where a route sets its
 * own level or serializers (none of ours does; the level must then hold from the first line).
 */
export const lazyRequestLoggers: ChildLoggerFactory = function (logger, bindings, options) {
  const parent = logger as ParentLogger
  if (options.level !== undefined || options.serializers !== undefined || typeof parent.isLevelEnabled !== 'function') return logger.child(bindings, options)
  return new LazyRequestLogger(parent, bindings, options)
}

/** pino's levels, lowest first. */
const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'] as const

/**
 * Fastify's own lines of each request ("incoming request", "request completed"), written at info:
 * below LOG_LEVEL they are skipped before Fastify builds them (an object, the response time), not
 * dropped after. Every other line (an error's, a 5xx's) is Fastify's as before.
 */
export class RequestLines extends LogController {
  private readonly infoWritten: boolean

  constructor (logLevel: string) {
    super()
    const rank = LEVELS.indexOf(logLevel as typeof LEVELS[number])
    this.infoWritten = rank !== -1 && rank <= LEVELS.indexOf('info')
  }

  override incomingRequest (...args: Parameters<LogController['incomingRequest']>): void {
    if (this.infoWritten) super.incomingRequest(...args)
  }

  override requestCompleted (...args: Parameters<LogController['requestCompleted']>): void {
    // An errored request is logged at error: always.
    if (this.infoWritten || (args[0] !== null && args[0] !== undefined)) super.requestCompleted(...args)
  }
}
