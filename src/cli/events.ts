import type { AccountStore } from '../../db/store.js'
import { visible } from '../../core/control-characters.js'
import { SECURITY_EVENT_TYPES } from '../../core/events/types.js'
import { presentAdminEvent } from '../../core/schemas/admin.js'
import { expectPositionals, findUser, parsePositiveInteger, print, UsageError, type CommandGroup, type Options, type Output } from './command.js'

/**
 * `events <id|email>` (a user's security events) and `events export` (the whole trail). The group takes its
 * argument where the other groups have their action: it is named by its group alone.
 */
export const events: CommandGroup = (positionals, options) => {
  const action = positionals[1]
  if (action === 'export') {
    expectPositionals(positionals, 2, 'events export [--user id|email] [--type type] [--before event-id]')
    if (options.type !== undefined && !(SECURITY_EVENT_TYPES as readonly string[]).includes(options.type)) {
      throw new UsageError(`unknown event type ${options.type}; one of ${SECURITY_EVENT_TYPES.join(', ')}`)
    }
    return exportEvents
  }
  expectPositionals(positionals, 2, 'events <id|email> [--limit n] [--before event-id]')
  return async (store, options, out) => listEvents(store, action, options, out)
}

/** How many events an export reads at a time: memory stays flat however long the trail. */
const EXPORT_PAGE = 500

/** NDJSON of every event matching the filters, newest first, written page by page; each line as GET /admin/events shows the event. */
async function exportEvents (store: AccountStore, options: Options, out: Output) {
  const userId = options.user === undefined ? undefined : (await findUser(store, options.user)).id
  let beforeId = options.before === undefined ? undefined : parsePositiveInteger(options.before, '--before')
  for (;;) {
    const page = await store.searchSecurityEvents({ userId, type: options.type, beforeId, limit: EXPORT_PAGE })
    for (const event of page) {
      out(JSON.stringify(presentAdminEvent(event)))
    }
    if (page.length < EXPORT_PAGE) return
    beforeId = page[page.length - 1].id
  }
}

async function listEvents (store: AccountStore, idOrEmail: string, options: Options, out: Output) {
  const user = await findUser(store, idOrEmail)
  const limit = parsePositiveInteger(options.limit ?? '50', '--limit')
  const beforeId = options.before === undefined ? undefined : parsePositiveInteger(options.before, '--before')
  const events = await store.listSecurityEvents(user.id, { limit, beforeId })
  const described = events.map(event => ({ ...event, createdAt: event.createdAt.toISOString() }))
  print(out, options, described, events.length === 0
    ? `no security events of user ${user.id} (${visible(user.email)})`
    : described.map(event => visible(`${event.id}  ${event.createdAt}  ${event.type}  ${event.ip ?? '-'}  ${event.userAgent ?? '-'}${event.detail === null ? '' : `  ${JSON.stringify(event.detail)}`}`)).join('\n'))
}
