import { hash } from '@node-rs/argon2'
import { ARGON2ID_OPTIONS } from '../core/passwords/passwords.js'

/**
 * The raw Argon2id rate of this machine at the service's parameters: hashes
 * kept in flight (as many as the load's connections) on the libuv pool for a
 * window, after a warm-up. Reports { perSecond } to the harness.
 */
const [warmupSeconds, seconds, inFlight] = process.argv.slice(2).map(Number)

async function hashFor (milliseconds: number): Promise<number> {
  const end = Date.now() + milliseconds
  let done = 0
  await Promise.all(Array.from({ length: inFlight }, async (_, slot) => {
    while (Date.now() < end) {
      await hash(`bench-password-${slot}`, ARGON2ID_OPTIONS)
      done++
    }
  }))
  return done
}

await hashFor(warmupSeconds * 1000)
const started = process.hrtime.bigint()
const done = await hashFor(seconds * 1000)
const elapsedSeconds = Number(process.hrtime.bigint() - started) / 1e9
process.send?.({ perSecond: done / elapsedSeconds })
