import { Readable } from 'node:stream'
import type { FastifyPluginAsync, onRequestHookHandler } from 'fastify'
import type { ImportSource } from '../../core/admin/admin.js'
import { PayloadTooLargeError } from '../../core/errors.js'
import { ImportSummary } from '../../core/schemas/import.js'

/**
 * The largest NDJSON body: about 700,000 users of 190 bytes (a bcrypt hash and names). The body is read as it
 * is imported, so REQUEST_TIMEOUT (30 s at most) bounds a request too: some 300,000 users on SQLite, 180,000
 * on PostgreSQL on a 2-core test host. Bigger imports: several requests (an import run again skips the users
 * already there), or the CLI.
 */
export const IMPORT_NDJSON_LIMIT = 128 * 1024 * 1024
/** The largest JSON array body: an array is parsed whole before a user is read, so it is held in memory; NDJSON is not. */
export const IMPORT_JSON_LIMIT = 16 * 1024 * 1024

export interface ImportRoutesOptions {
  ndjsonLimit?: number
  jsonLimit?: number
  /** The route's guards: the admin API's (an admin with a fresh session). */
  onRequest?: onRequestHookHandler[]
}

/**
 * `POST /users/import` on the instance it is registered on: the admin API (routes/admin/) registers it under
 * `/admin`, behind its guards. `application/x-ndjson` is streamed into the import (`fastify.userImport`,
 * plugins/app/user-import.ts) as it arrives; `application/json` is an array, parsed by the instance's JSON parser.
 */
const importRoutes: FastifyPluginAsync<ImportRoutesOptions> = async (fastify, { ndjsonLimit = IMPORT_NDJSON_LIMIT, jsonLimit = IMPORT_JSON_LIMIT, onRequest = [] }) => {
  // The body stays a stream: no parser of Fastify's buffers it (so its bodyLimit does not apply: ours does).
  fastify.addContentTypeParser('application/x-ndjson', (request, payload, done) => {
    const length = Number(request.headers['content-length'])
    if (length > ndjsonLimit) done(new PayloadTooLargeError(), undefined)
    else done(null, payload)
  })

  fastify.post('/users/import', {
    bodyLimit: jsonLimit,
    onRequest,
    schema: {
      summary: 'Import users with their password hashes',
      description: 'NDJSON (`application/x-ndjson`, one user a line, streamed, up to 128 MiB) or a JSON array (up to 16 MiB). ' +
        'Each user: `email`, `first_name`, `last_name`, optional `username`, `password_hash` (bcrypt, Argon2, scrypt or PBKDF2 ' +
        'in PHC form; none: no password) and `email_verified`. A bad line, or a taken email or username, is skipped with its ' +
        'reason: every skipped line is counted (`skipped_count`), the first 100 are listed in `skipped` (`skipped_truncated` when ' +
        'more were left out). The old hash verifies the first login and is replaced by Argon2id then.',
      consumes: ['application/x-ndjson', 'application/json'],
      response: { 200: ImportSummary }
    }
  }, async (request) => {
    const { body } = request
    const source: ImportSource = body instanceof Readable ? { format: 'ndjson', chunks: body, maxBytes: ndjsonLimit } : { format: 'json', users: body }
    // Behind the admin API's guard the import is an admin act of the audit trail (Admin.importUsers, as the CLI's);
    // this plugin alone (its own tests) imports without one.
    const actor = request.adminActor
    if (actor != null) return await fastify.admin.importUsers(actor, source)
    return source.format === 'ndjson'
      ? await fastify.userImport.importNdjson(source.chunks, { maxBytes: ndjsonLimit })
      : await fastify.userImport.importArray(source.users)
  })
}

export default importRoutes
