import type { AccountStore } from '../../db/store.js'
import { visible } from '../../core/control-characters.js'
import { removeClient as removeClientAndGrants } from '../../core/oauth/client-removal.js'
import { CLIENT_GRANTS, CLIENT_PKCE, newClient, type ClientGrant, type ClientPkce, type NewClient } from '../../core/oauth/clients.js'
import { CommandError, expectPositionals, print, unknownCommand, UsageError, type CommandGroup, type Options, type Output } from './command.js'

/** `clients add|list|remove`: the apps registered with the OAuth provider. */
export const clients: CommandGroup = (positionals, options) => {
  const [, action, argument] = positionals
  switch (action) {
    case 'add': {
      expectPositionals(positionals, 3, 'clients add <name> --redirect-uri <url> [--redirect-uri <url>] [--post-logout-redirect-uri <url>] ' +
        '[--backchannel-logout-uri <url>] [--public] [--trusted] [--grant <grant>] [--pkce required|optional]')
      const client = parseNewClient(argument, options)
      return async (store, options, out) => addClient(store, client, options, out)
    }
    case 'list':
      expectPositionals(positionals, 2, 'clients list')
      return listClients
    case 'remove':
      expectPositionals(positionals, 3, 'clients remove <client_id>')
      return async (store, options, out) => removeClient(store, argument, options, out)
    default:
      throw unknownCommand(positionals)
  }
}

/** What `clients add` was given, checked: the usage errors come before the store is opened. */
function parseNewClient (name: string, options: Options): NewClient {
  if (name.trim() === '') throw new UsageError('a client needs a name')
  if (visible(name) !== name) throw new UsageError(`a client name may not hold control characters: ${name}`)
  const grants = options.grants === undefined ? undefined : [...new Set(options.grants)]
  for (const grant of grants ?? []) {
    if (!(CLIENT_GRANTS as readonly string[]).includes(grant)) throw new UsageError(`unknown grant ${grant}; one of ${CLIENT_GRANTS.join(', ')}`)
  }
  for (const uri of [...options.redirectUris, ...options.postLogoutRedirectUris, ...(options.backchannelLogoutUri === undefined ? [] : [options.backchannelLogoutUri])]) checkRedirectUri(uri)
  const usesCodes = grants === undefined || grants.includes('authorization_code')
  if (usesCodes && options.redirectUris.length === 0) throw new UsageError('the authorization_code grant needs at least one --redirect-uri')
  if (options.public && grants?.includes('client_credentials') === true) throw new UsageError('a --public client has no secret to use the client_credentials grant with')
  if (options.pkce !== undefined && !(CLIENT_PKCE as readonly string[]).includes(options.pkce)) throw new UsageError(`--pkce is one of ${CLIENT_PKCE.join(', ')}: ${options.pkce}`)
  // PKCE is all that binds a public client's code to it: it may never leave it out.
  if (options.public && options.pkce === 'optional') throw new UsageError('a --public client must send PKCE: --pkce optional is only for a confidential client')
  return {
    name,
    redirectUris: [...new Set(options.redirectUris)],
    postLogoutRedirectUris: [...new Set(options.postLogoutRedirectUris)],
    ...(options.backchannelLogoutUri === undefined ? {} : { backchannelLogoutUri: options.backchannelLogoutUri }),
    public: options.public,
    trusted: options.trusted,
    grants: grants as ClientGrant[] | undefined,
    pkce: options.pkce as ClientPkce | undefined
  }
}

/** An absolute http(s) URL, without a fragment (RFC 6749, 3.1.2), as the app will send it. */
function checkRedirectUri (uri: string): void {
  let url: URL | undefined
  try {
    url = new URL(uri)
  } catch {}
  // Written out in full: the URL parser would also take https:app.example (and make it https://app.example/).
  if (url === undefined || !/^https?:\/\//i.test(uri)) throw new UsageError(`not an absolute http(s) URL: ${uri}`)
  if (uri.includes('#')) throw new UsageError(`a redirect URI may not have a fragment: ${uri}`)
}

async function addClient (store: AccountStore, client: NewClient, options: Options, out: Output) {
  const { metadata, secret } = newClient(client)
  await store.upsertOAuthModel('Client', metadata.client_id, metadata, null)
  const described = { client_id: metadata.client_id, ...(secret === undefined ? {} : { client_secret: secret }), ...describeClient(metadata) }
  const lines = [
    `added ${described.public ? 'public' : 'confidential'} client ${visible(described.client_name)}`,
    `client_id: ${metadata.client_id}`
  ]
  if (secret !== undefined) {
    lines.push(`client_secret: ${secret}`, 'The client secret is shown only now: the store keeps its hash, and it cannot be shown again. Give it to the app now.')
  }
  print(out, options, described, lines.join('\n'))
}

async function listClients (store: AccountStore, options: Options, out: Output) {
  const clients = (await store.listOAuthModels('Client', new Date())).map(client => ({ client_id: client.id, ...describeClient(client.payload) }))
  print(out, options, clients, clients.length === 0
    ? 'no clients'
    : clients.map(client => visible(`${client.client_id}  ${client.client_name}  ${client.public ? 'public' : 'confidential'}${client.trusted ? '  trusted' : ''}${client.pkce === 'optional' ? '  pkce optional' : ''}` +
      `  grants: ${client.grant_types.length === 0 ? '-' : client.grant_types.join(',')}  redirect URIs: ${client.redirect_uris.length === 0 ? '-' : client.redirect_uris.join(' ')}`)).join('\n'))
}

async function removeClient (store: AccountStore, clientId: string, options: Options, out: Output) {
  if (!await removeClientAndGrants(store, clientId, new Date())) throw new CommandError(`no client with id ${clientId}`)
  print(out, options, { removed: clientId }, `removed client ${visible(clientId)}`)
}

/**
 * A client's stored metadata, named field by field: never its secret (a hash here, but a hash of a
 * short secret could be guessed offline), nor anything else a registration may have stored beside.
 */
function describeClient (metadata: Record<string, unknown>) {
  const strings = (value: unknown) => Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []
  return {
    client_name: typeof metadata.client_name === 'string' ? metadata.client_name : '',
    public: metadata.token_endpoint_auth_method === 'none',
    trusted: metadata.trusted === true,
    pkce: metadata.pkce === 'optional' ? 'optional' : 'required',
    grant_types: strings(metadata.grant_types),
    redirect_uris: strings(metadata.redirect_uris),
    post_logout_redirect_uris: strings(metadata.post_logout_redirect_uris),
    ...(typeof metadata.backchannel_logout_uri === 'string' ? { backchannel_logout_uri: metadata.backchannel_logout_uri } : {})
  }
}
