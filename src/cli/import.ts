import type { AccountStore } from '../../db/store.js'
import { CLI_OPERATOR } from '../../core/admin/roles.js'
import { asOperator, CommandError, print, type Context, type Options, type Output } from './command.js'

/**
 * Users from NDJSON or a JSON array (told apart by the first character that is not a space: `[`). NDJSON is
 * streamed, batch by batch; an array is parsed whole, so for a big import NDJSON is the form to use. Through the
 * admin rules, as the admin API's import: its audit row (users_imported, actor_id null).
 */
export async function importUsers (
  store: AccountStore, open: () => AsyncIterable<Uint8Array | string>, options: Options, out: Output, context: Context
) {
  // Opened and read at once: a file's open error is then the first read's.
  const chunks = open()[Symbol.asyncIterator]()
  const head: Array<Uint8Array | string> = []
  let first: string | undefined
  try {
    while (first === undefined) {
      const next = await chunks.next()
      if (next.done === true) break
      head.push(next.value)
      first = /[^\s\uFEFF]/u.exec(typeof next.value === 'string' ? next.value : Buffer.from(next.value).toString('utf8'))?.[0]
    }
  } catch (error) {
    throw new CommandError(`cannot read the users: ${(error as Error).message}`)
  }
  async function * all () {
    yield * head
    for (let next = await chunks.next(); next.done !== true; next = await chunks.next()) yield next.value
  }
  let summary
  if (first === '[') {
    const parts: Buffer[] = []
    for await (const chunk of all()) parts.push(Buffer.from(chunk))
    let users: unknown
    try {
      users = JSON.parse(Buffer.concat(parts).toString('utf8').replace(/^\uFEFF/, ''))
    } catch (error) {
      throw new CommandError(`the file starts with [ but is no JSON array: ${(error as Error).message}`)
    }
    summary = await asOperator(store, context, ({ admin }) => admin.importUsers(CLI_OPERATOR, { format: 'json', users }))
  } else {
    summary = await asOperator(store, context, ({ admin }) => admin.importUsers(CLI_OPERATOR, { format: 'ndjson', chunks: all() }))
  }
  const { imported, skipped, skipped_count: skippedCount } = summary
  print(out, options, summary, [
    `imported ${imported} user${imported === 1 ? '' : 's'}, skipped ${skippedCount}`,
    ...skipped.map(({ line, reason }) => `line ${line}: ${reason}`),
    ...(summary.skipped_truncated ? [`(the first ${skipped.length} skipped lines; ${skippedCount - skipped.length} more not listed)`] : [])
  ].join('\n'))
}
