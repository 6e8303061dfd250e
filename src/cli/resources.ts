import type { AccountStore } from '../../db/store.js'
import { SCOPES } from '../../core/oauth/provider.js'
import { addResourceServer, listResourceServers, removeResourceServer, resourceUriProblem, scopeProblem, type ResourceServer } from '../../core/oauth/resource-servers.js'
import { CommandError, expectPositionals, print, unknownCommand, UsageError, type CommandGroup, type Options, type Output } from './command.js'

/** `resources add|list|remove`: the APIs apps may ask tokens for (RFC 8707 resource indicators). */
export const resources: CommandGroup = (positionals, options) => {
  const [, action, argument] = positionals
  switch (action) {
    case 'add': {
      expectPositionals(positionals, 3, 'resources add <uri> --scopes "<scope> [<scope> ...]"')
      const resource = parseResourceServer(argument, options)
      return async (store, options, out, { config }) => addResource(store, resource, config.mail.publicUrl, options, out)
    }
    case 'list':
      expectPositionals(positionals, 2, 'resources list')
      return listResources
    case 'remove':
      expectPositionals(positionals, 3, 'resources remove <uri>')
      return async (store, options, out) => removeResource(store, argument, options, out)
    default:
      throw unknownCommand(positionals)
  }
}

/** What `resources add` was given, checked before the store is opened. */
function parseResourceServer (uri: string, options: Options): ResourceServer {
  const problem = resourceUriProblem(uri)
  if (problem !== undefined) throw new UsageError(problem)
  const scopes = (options.scopes ?? '').split(' ').filter(scope => scope !== '')
  if (scopes.length === 0) throw new UsageError('an API needs its scopes: --scopes "read write"')
  for (const scope of scopes) {
    const scopeIssue = scopeProblem(scope, SCOPES)
    if (scopeIssue !== undefined) throw new UsageError(scopeIssue)
  }
  return { uri, scopes: [...new Set(scopes)] }
}

async function addResource (store: AccountStore, resource: ResourceServer, publicUrl: string, options: Options, out: Output) {
  // The service's own resource is PUBLIC_URL, with the user scopes: an API of that name would never be asked for.
  if (resource.uri === publicUrl) throw new CommandError(`${resource.uri} is PUBLIC_URL, the service's own resource`)
  const replaced = await addResourceServer(store, resource, new Date())
  print(out, options, { resource: resource.uri, scopes: resource.scopes, replaced },
    `${replaced ? 'updated' : 'added'} resource ${resource.uri} with the scopes ${resource.scopes.join(' ')}; running instances take it within seconds`)
}

async function listResources (store: AccountStore, options: Options, out: Output) {
  const resources = await listResourceServers(store, new Date())
  print(out, options, resources.map(({ uri, scopes }) => ({ resource: uri, scopes })), resources.length === 0
    ? 'no resources (apps\' tokens are all for the service itself, PUBLIC_URL)'
    : resources.map(({ uri, scopes }) => `${uri}  scopes: ${scopes.join(' ')}`).join('\n'))
}

async function removeResource (store: AccountStore, uri: string, options: Options, out: Output) {
  if (!await removeResourceServer(store, uri, new Date())) throw new CommandError(`no resource ${uri}`)
  print(out, options, { removed: uri }, `removed resource ${uri}: new tokens for it are refused; issued ones live out their lifetime`)
}
