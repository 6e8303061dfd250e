import { setImmediate as nextTurn } from 'node:timers/promises'
import fp from 'fastify-plugin'

export interface TokenPruningOptions {
  /** How often to prune; 0 never does. */
  intervalSeconds: number
}

/** Rows deleted per statement: each batch is one short write, so requests wait behind none for long. */
export const PRUNE_BATCH_SIZE = 500

/**
 * Deletes expired and revoked refresh tokens in the background, on an unref'd
 * timer (REFRESH_TOKEN_PRUNE_INTERVAL), in small batches with a turn of the
 * event loop between them. Rotated tokens stay until they expire: presenting
 * one again must still be recognised as reuse.
 */
export default fp<TokenPruningOptions>(async (fastify, { intervalSeconds }) => {
  if (intervalSeconds === 0) return
  const { store } = fastify
  const state = { closing: false }
  let running: Promise<void> | undefined

  async function prune (): Promise<void> {
    let deleted = 0
    let batch: number
    do {
      batch = await store.pruneRefreshTokens(new Date(), PRUNE_BATCH_SIZE)
      deleted += batch
      await nextTurn()
    } while (batch === PRUNE_BATCH_SIZE && !state.closing)
    if (deleted > 0) fastify.log.info({ deleted }, 'pruned expired and revoked refresh tokens')
  }

  const timer = setInterval(() => {
    running ??= prune()
      .catch((error: unknown) => { fastify.log.warn({ err: error }, 'refresh-token pruning failed; retrying at the next interval') })
      .finally(() => { running = undefined })
  }, intervalSeconds * 1000)
  timer.unref()
  fastify.addHook('onClose', async () => {
    state.closing = true
    clearInterval(timer)
    await running
  })
}, { name: 'token-pruning', dependencies: ['store'] })
