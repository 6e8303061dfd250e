import fp from 'fastify-plugin'
import { openStore } from '../../db/open.js'
import type { AccountStore } from '../../db/store.js'

declare module 'fastify' {
  interface FastifyInstance {
    store: AccountStore
  }
}

export interface StoreOptions {
  databaseUrl: string
}

/** Opens the account store named by DATABASE_URL (migrating it) and closes it with the server. */
export default fp<StoreOptions>(async (fastify, { databaseUrl }) => {
  const store = await openStore(databaseUrl)
  fastify.decorate('store', store)
  fastify.addHook('onClose', async () => { await store.close() })
}, { name: 'store' })
