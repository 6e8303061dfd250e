import fp from 'fastify-plugin'
import { systemClock, type Clock } from '../../core/clock.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Where every rule reads the time (core/clock.ts); a test passes one it can move forward. */
    clock: Clock
  }
}

export interface ClockOptions {
  clock?: Clock
}

export default fp<ClockOptions>(async (fastify, { clock = systemClock }) => {
  fastify.decorate('clock', clock)
}, { name: 'clock' })
