import type { AccountStore, SigningKeyRecord } from '../../db/store.js'
import { newestOfEachKind, rotateSigningKeys } from '../../core/tokens/keys.js'
import { expectPositionals, print, unknownCommand, type CommandGroup, type Context, type Options, type Output } from './command.js'

/** `keys list`, `keys rotate`: the signing keys in the store. */
export const keys: CommandGroup = (positionals) => {
  switch (positionals[1]) {
    case 'list':
      expectPositionals(positionals, 2, 'keys list')
      return listKeys
    case 'rotate':
      expectPositionals(positionals, 2, 'keys rotate')
      return rotateKeys
    default:
      throw unknownCommand(positionals)
  }
}

async function listKeys (store: AccountStore, options: Options, out: Output) {
  const keys = await store.listSigningKeys()
  const signing = newestOfEachKind(keys)
  const described = keys.map(key => ({ ...describeKey(key), signing: signing.includes(key) }))
  print(out, options, described, described.length === 0
    ? 'no signing keys yet (the service makes one at its first start)'
    : described.map(key => `${key.kid}  ${key.algorithm}  ${key.createdAt}${key.signing ? '  (signs)' : ''}`).join('\n'))
}

async function rotateKeys (store: AccountStore, options: Options, out: Output, { sealer }: Context) {
  // Sealed with SIGNING_KEY_ENCRYPTION_KEY when it is set (the service must be given the same one).
  const keys = await rotateSigningKeys(store, { sealer })
  print(out, options, keys.map(describeKey), [
    ...keys.map(key => `added signing key ${key.kid} (${key.algorithm})`),
    'running instances sign with them once they reload their keys (SIGNING_KEY_RELOAD_INTERVAL); the old keys verify until their tokens have expired'
  ].join('\n'))
}

/** A key without its private half. */
function describeKey (key: Pick<SigningKeyRecord, 'kid' | 'algorithm' | 'createdAt'>) {
  return { kid: key.kid, algorithm: key.algorithm, createdAt: key.createdAt.toISOString() }
}
