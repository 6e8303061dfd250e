import { CLIENT_GRANTS } from '../../core/oauth/clients.js'

/** `account-service --help`: every command and option. Each command group's file (src/cli/<group>.ts) does what it says. */
export const HELP = `Usage: account-service <command> [options]

Commands:
  migrate                     apply the store's migrations (the service also does at start)
  keys list                   the signing keys, oldest first; the newest of each kind (service, RS256) signs
  keys rotate                 add a new Ed25519 key and a new RS256 key (ID tokens); running services sign with them after
                              their next key reload. Sealed with SIGNING_KEY_ENCRYPTION_KEY, which a store of sealed keys
                              requires (refused without it)
  users list                  users in id order (--limit, --after for the next page)
  users show <id|email>       one user
  users delete <id>           delete a user and every session of theirs; recorded as admin_user_deleted (sent as user.deleted)
  users import <file>         import users from another system, with their password hashes (bcrypt, Argon2, scrypt, PBKDF2):
                              NDJSON, one user a line (streamed), or a JSON array; - reads standard input. Prints how many
                              were imported and skipped, and the first 100 skipped lines with their reasons (a bad line or a taken
                              email never stops it)
  users set-role <id|email> <role>
                              make a user an admin (role admin) or not (role user); recorded as a security event
                              (role_changed). Admins use the admin API (/admin)
  sessions revoke <id|email>  end every session of a user (access tokens are refused within the revocation bound); recorded as
                              admin_sessions_revoked (sent as session.revoked)
  mfa reset <id|email>        turn off a user's TOTP and void its recovery codes (support, for a lost authenticator);
                              the next login asks for the password only. Recorded as admin_mfa_reset (sent as mfa.changed);
                              the owner is mailed (through the outbox: the running service sends it)
  hash calibrate              measure Argon2id on this host and store the parameters that take about PASSWORD_HASH_TARGET
                              (never below OWASP's minimum); instances hash with them after their next start, and rehash
                              each password at its next login
  events <id|email>           a user's security events, newest first (--limit, --before <event id> for older ones)
  events export               every security event (every user's, and every admin action), newest first, one JSON object
                              a line (NDJSON), read page by page (--user <id|email>, --type <type>, --before <event id>)
  clients add <name>          register an app with the OAuth provider (--redirect-uri, required with the authorization_code
                              grant; --post-logout-redirect-uri; --backchannel-logout-uri; --public; --trusted; --grant; --pkce); prints its client_id and,
                              for a confidential client, its client_secret, shown this once only (the store keeps a hash)
  clients list                the registered apps: id, name, public or confidential, trusted, grants, redirect URIs
  clients remove <client_id>  delete an app's registration and end its grants (and tokens), as revoking them does
  resources add <uri>         register an API apps may ask tokens for (RFC 8707 resource indicators) with its scopes
                              (--scopes "read write", required): a token asked for with resource=<uri> has aud <uri> and
                              carries only these scopes. Adding a registered URI again replaces its scopes
  resources list              the registered APIs and their scopes
  resources remove <uri>      unregister an API: new tokens for it are refused (invalid_target); issued ones live out their
                              lifetime

Options:
  --database <url>   the store (default: DATABASE_URL, else ./data/accounts.db)
  --limit <n>        users list: at most n users (default 50)
  --after <id>       users list: start after this id
  --before <id>      events: only events older than this event id
  --user <id|email>  events export: only this user's events
  --type <type>      events export: only events of this type (login, account_disabled, role_changed, ...)
  --redirect-uri <url>
                     clients add: an absolute http(s) URL the app receives its codes at (repeatable)
  --post-logout-redirect-uri <url>
                     clients add: where the app may send the user after logout (repeatable)
  --backchannel-logout-uri <url>
                     clients add: where the app hears, by a signed logout token, that a user signed out
                     (OpenID Back-Channel Logout 1.0)
  --public           clients add: no client secret (a SPA, a mobile or command-line app): PKCE alone binds its codes
  --trusted          clients add: a first-party app: no consent page
  --pkce <required|optional>
                     clients add: whether the app must send PKCE (default required); optional only for a confidential
                     app that cannot send it (a public app always must)
  --grant <grant>    clients add: a grant the app may use (repeatable), replacing the default authorization_code and
                     refresh_token; one of:
                     ${CLIENT_GRANTS.join(', ')}
  --scopes <scopes>  resources add: the API's scopes, separated by spaces (none of openid, email, profile, offline_access)
  --json             print JSON instead of text
  -h, --help         this help
  -v, --version      the version, and the Node it runs on

Exit codes: 0 done, 1 failed (not found, store error), 2 usage error.`
