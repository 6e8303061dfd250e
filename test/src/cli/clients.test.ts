import { existsSync } from 'node:fs'
import t from 'tap'
import { clientSecretMatches, HASHED_SECRET_PREFIX } from '../../../core/oauth/clients.js'
import { openStore } from '../../../db/open.js'
import { runAdmin } from '../../../src/admin.js'
import { temporaryDatabase } from '../../fixtures/temporary.js'

/** `account-service <args>` in this process (as test/src/cli.test.ts runs it), with DATABASE_URL as given. */
async function cli (databaseUrl: string, ...args: string[]) {
  const stdout: string[] = []
  const stderr: string[] = []
  const code = await runAdmin(args, {
    out: line => { stdout.push(`${line}\n`) },
    err: line => { stderr.push(`${line}\n`) },
    env: { DATABASE_URL: databaseUrl }
  })
  return { code, stdout: stdout.join(''), stderr: stderr.join('') }
}

/** The stored metadata of a client, straight from the store. */
async function storedClient (databaseUrl: string, clientId: string) {
  const store = await openStore(databaseUrl)
  try {
    return (await store.findOAuthModel('Client', clientId, new Date()))?.payload
  } finally {
    await store.close()
  }
}

t.test('clients add stores a confidential client and shows its secret once; the store keeps only its hash', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const added = await cli(databaseUrl, 'clients', 'add', 'Web app', '--redirect-uri', 'https://app.example/callback', '--redirect-uri', 'http://localhost:3000/cb',
    '--post-logout-redirect-uri', 'https://app.example/', '--trusted')
  t.equal(added.code, 0, added.stderr)
  const [, clientId, secret] = added.stdout.match(/^added confidential client Web app\nclient_id: (\S+)\nclient_secret: (\S+)\nThe client secret is shown only now[^\n]*\n$/) ?? []
  t.ok(clientId, added.stdout)
  const stored = await storedClient(databaseUrl, clientId)
  t.match(stored, {
    client_id: clientId,
    client_name: 'Web app',
    redirect_uris: ['https://app.example/callback', 'http://localhost:3000/cb'],
    post_logout_redirect_uris: ['https://app.example/'],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
    trusted: true
  })
  const storedSecret = String(stored?.client_secret)
  t.ok(storedSecret.startsWith(HASHED_SECRET_PREFIX), 'a hash')
  t.notOk(storedSecret.includes(secret), 'never the secret itself')
  t.ok(clientSecretMatches(storedSecret, secret), 'the secret shown is the one whose hash is kept')

  const json = await cli(databaseUrl, 'clients', 'add', 'Machine', '--grant', 'client_credentials', '--json')
  t.equal(json.code, 0, json.stderr)
  const described = JSON.parse(json.stdout)
  t.same(Object.keys(described).sort(), ['client_id', 'client_name', 'client_secret', 'grant_types', 'pkce', 'post_logout_redirect_uris', 'public', 'redirect_uris', 'trusted'])
  t.match(described, { client_name: 'Machine', public: false, trusted: false, grant_types: ['client_credentials'], redirect_uris: [] }, '--grant replaces the default grants')
  t.ok(clientSecretMatches(String((await storedClient(databaseUrl, described.client_id))?.client_secret), described.client_secret))
  t.match(await storedClient(databaseUrl, described.client_id), { response_types: [], token_endpoint_auth_method: 'client_secret_basic' })
})

t.test('clients add --public stores a client without a secret and shows none', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const added = await cli(databaseUrl, 'clients', 'add', 'SPA', '--public', '--redirect-uri', 'https://spa.example/cb', '--json')
  t.equal(added.code, 0, added.stderr)
  const described = JSON.parse(added.stdout)
  t.notOk('client_secret' in described)
  t.match(described, { client_name: 'SPA', public: true, trusted: false, grant_types: ['authorization_code', 'refresh_token'], redirect_uris: ['https://spa.example/cb'] })
  const stored = await storedClient(databaseUrl, described.client_id)
  t.match(stored, { token_endpoint_auth_method: 'none' })
  t.notOk(stored !== undefined && 'client_secret' in stored)

  const text = await cli(databaseUrl, 'clients', 'add', 'TV', '--public', '--grant', 'urn:ietf:params:oauth:grant-type:device_code')
  t.equal(text.code, 0, text.stderr)
  t.match(text.stdout, /^added public client TV\nclient_id: \S+\n$/, 'no secret, no redirect URI needed without authorization_code')
})

t.test('clients list shows every client, never a secret or its hash; clients remove deletes one', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  t.equal((await cli(databaseUrl, 'clients', 'list')).stdout, 'no clients\n')
  const web = JSON.parse((await cli(databaseUrl, 'clients', 'add', 'Web', '--redirect-uri', 'https://web.example/cb', '--trusted', '--json')).stdout)
  // A name with a terminal escape and a line break (a dynamic registration's, say) shows them escaped.
  const spa = JSON.parse((await cli(databaseUrl, 'clients', 'add', 'SPA', '--public', '--redirect-uri', 'https://spa.example/cb', '--redirect-uri', 'https://spa.example/cb2', '--json')).stdout)
  const store = await openStore(databaseUrl)
  await store.upsertOAuthModel('Client', 'registered', { client_id: 'registered', client_name: 'Evil\u001b[2J\nname', client_secret: 'plain-secret', redirect_uris: ['https://evil.example/cb'] }, null)
  await store.close()

  const listed = await cli(databaseUrl, 'clients', 'list')
  t.equal(listed.code, 0, listed.stderr)
  t.equal(listed.stdout, [
    `${web.client_id}  Web  confidential  trusted  grants: authorization_code,refresh_token  redirect URIs: https://web.example/cb`,
    `${spa.client_id}  SPA  public  grants: authorization_code,refresh_token  redirect URIs: https://spa.example/cb https://spa.example/cb2`,
    'registered  Evil\\x1b[2J\\x0aname  confidential  grants: -  redirect URIs: https://evil.example/cb'
  ].join('\n') + '\n', 'in the order they were added, the name escaped')
  const json = await cli(databaseUrl, 'clients', 'list', '--json')
  t.equal(json.code, 0)
  const clients = JSON.parse(json.stdout)
  t.same(clients.map((client: { client_id: string }) => client.client_id), [web.client_id, spa.client_id, 'registered'])
  t.same(clients[0], { client_id: web.client_id, client_name: 'Web', public: false, trusted: true, pkce: 'required', grant_types: ['authorization_code', 'refresh_token'], redirect_uris: ['https://web.example/cb'], post_logout_redirect_uris: [] })
  t.equal(clients[2].client_name, 'Evil\u001b[2J\nname')
  for (const output of [listed.stdout, json.stdout]) {
    t.notMatch(output, /secret/i)
    t.notMatch(output, HASHED_SECRET_PREFIX)
    t.notMatch(output, web.client_secret)
    t.notMatch(output, '\u001b', 'no raw escape reaches the terminal')
  }

  // A client_id may start with - (base64url): after --, it is taken for no option.
  const removed = await cli(databaseUrl, 'clients', 'remove', spa.client_id)
  t.equal(removed.code, 0, removed.stderr)
  t.equal(removed.stdout, `removed client ${spa.client_id}\n`)
  t.equal(await storedClient(databaseUrl, spa.client_id), undefined)
  t.same(JSON.parse((await cli(databaseUrl, 'clients', 'list', '--json')).stdout).map((client: { client_id: string }) => client.client_id), [web.client_id, 'registered'], 'the others stay')
  const again = await cli(databaseUrl, 'clients', 'remove', spa.client_id)
  t.equal(again.code, 1)
  t.equal(again.stderr, `error: no client with id ${spa.client_id}\n`)
  t.equal(again.stdout, '')
})

t.test('clients add refuses, with a usage error and before opening the store, what cannot make a client', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const refusals: Array<[string[], RegExp]> = [
    [['clients', 'add', 'App'], /^the authorization_code grant needs at least one --redirect-uri\n/],
    [['clients', 'add', 'App', '--grant', 'authorization_code', '--grant', 'client_credentials'], /^the authorization_code grant needs at least one --redirect-uri\n/],
    [['clients', 'add', 'App', '--redirect-uri', '/callback'], /^not an absolute http\(s\) URL: \/callback\n/],
    [['clients', 'add', 'App', '--redirect-uri', 'app.example/cb'], /^not an absolute http\(s\) URL: app\.example\/cb\n/],
    [['clients', 'add', 'App', '--redirect-uri', 'com.example.app:/callback'], /^not an absolute http\(s\) URL: com\.example\.app:\/callback\n/],
    [['clients', 'add', 'App', '--redirect-uri', 'javascript://app.example/%0aalert(1)'], /^not an absolute http\(s\) URL: javascript:/],
    [['clients', 'add', 'App', '--redirect-uri', 'https:app.example/cb'], /^not an absolute http\(s\) URL: https:app\.example\/cb\n/],
    [['clients', 'add', 'App', '--redirect-uri', 'https://'], /^not an absolute http\(s\) URL: https:\/\/\n/],
    [['clients', 'add', 'App', '--redirect-uri', 'https://app.example/cb#done'], /^a redirect URI may not have a fragment: /],
    [['clients', 'add', 'App', '--redirect-uri', 'https://app.example/cb', '--post-logout-redirect-uri', 'ftp://app.example/'], /^not an absolute http\(s\) URL: ftp:\/\/app\.example\/\n/],
    [['clients', 'add', 'App', '--public', '--grant', 'client_credentials'], /^a --public client has no secret to use the client_credentials grant with\n/],
    [['clients', 'add', 'App', '--redirect-uri', 'https://app.example/cb', '--grant', 'implicit'], /^unknown grant implicit; one of authorization_code, /],
    [['clients', 'add', 'App', '--redirect-uri', 'https://app.example/cb', '--grant', 'password'], /^unknown grant password; /],
    [['clients', 'add', '  ', '--redirect-uri', 'https://app.example/cb'], /^a client needs a name\n/],
    [['clients', 'add', 'Evil\u001b[2J', '--redirect-uri', 'https://app.example/cb'], /^a client name may not hold control characters: Evil\\x1b\[2J\n/],
    [['clients', 'add', '--redirect-uri', 'https://app.example/cb'], /^usage: account-service clients add <name> /],
    [['clients', 'add', 'Two', 'words', '--redirect-uri', 'https://app.example/cb'], /^usage: account-service clients add <name> /],
    [['clients', 'add', 'App', '--redirect-uri'], /--redirect-uri/],
    [['clients', 'list', 'extra'], /^usage: account-service clients list\n/],
    [['clients', 'remove'], /^usage: account-service clients remove <client_id>\n/],
    [['clients', 'frobnicate'], /^unknown command: clients frobnicate\n/]
  ]
  for (const [args, message] of refusals) {
    const refused = await cli(databaseUrl, ...args)
    t.equal(refused.code, 2, `${args.join(' ')}: exit 2`)
    t.match(refused.stderr, message, args.join(' '))
    t.match(refused.stderr, /Run account-service --help for the commands\.\n$/)
    t.equal(refused.stdout, '')
  }
  t.notOk(existsSync(databaseUrl), 'the store was never opened')
})

t.test('--help lists the clients commands and their options', async (t) => {
  const help = await cli(':memory:', '--help')
  for (const text of ['clients add <name>', 'clients list', 'clients remove <client_id>', '--redirect-uri <url>', '--post-logout-redirect-uri <url>', '--public', '--trusted', '--grant <grant>', 'client_credentials']) {
    t.match(help.stdout, text)
  }
})

t.test('clients add --backchannel-logout-uri stores the app\'s back-channel logout URI; one that is no http(s) URL is refused', async (t) => {
  const databaseUrl = temporaryDatabase(t)
  const added = await cli(databaseUrl, 'clients', 'add', 'Wiki', '--redirect-uri', 'https://wiki.example/callback', '--backchannel-logout-uri', 'https://wiki.example/backchannel-logout', '--json')
  t.equal(added.code, 0, added.stderr)
  const shown = JSON.parse(added.stdout)
  t.equal(shown.backchannel_logout_uri, 'https://wiki.example/backchannel-logout', 'shown')
  t.equal((await storedClient(databaseUrl, shown.client_id))?.backchannel_logout_uri, 'https://wiki.example/backchannel-logout', 'stored')
  const refused = await cli(databaseUrl, 'clients', 'add', 'Wiki', '--redirect-uri', 'https://wiki.example/callback', '--backchannel-logout-uri', 'wiki.example/logout')
  t.equal(refused.code, 2)
  t.match(refused.stderr, /not an absolute http\(s\) URL: wiki\.example\/logout/)
})
