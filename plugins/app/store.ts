import fp from 'fastify-plugin'
import { openStore } from '../../db/open.js'
import type { AccountStore } from '../../db/store.js'
import { createRevocations, type Revocations, type RevocationsOptions } from '../../core/revocations/revocations.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The store of DATABASE_URL, its revocations recorded in `revocations` before they return. */
    store: AccountStore
    revocations: Revocations
  }
}

export interface StoreOptions extends RevocationsOptions {
  databaseUrl: string
}

/**
 * Opens the account store named by DATABASE_URL (migrating it) and the revocation set that follows
 * its log (core/revocations/), and closes both with the server. Every plugin after it gets the one
 * store that keeps the set exact: no plugin sees the store without it, and none replaces it.
 */
export default fp<StoreOptions>(async (fastify, { databaseUrl, ...revocationsOptions }) => {
  const opened = await openStore(databaseUrl)
  // A start that fails here (the log unreadable) still closes what it opened.
  const { store, revocations, close } = await createRevocations({ store: opened, clock: fastify.clock, log: fastify.log }, revocationsOptions)
    .catch(async (error: unknown) => {
      await opened.close()
      throw error
    })
  fastify.decorate('store', store)
  fastify.decorate('revocations', revocations)
  fastify.addHook('onClose', async () => {
    await close()
    await opened.close()
  })
}, { name: 'store', dependencies: ['clock'] })
