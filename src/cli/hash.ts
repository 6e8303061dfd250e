import type { AccountStore } from '../../db/store.js'
import { expectPositionals, print, unknownCommand, type CommandGroup, type Context, type Options, type Output } from './command.js'

/** `hash calibrate`: the Argon2id parameters of this host. */
export const hash: CommandGroup = (positionals) => {
  if (positionals[1] !== 'calibrate') throw unknownCommand(positionals)
  expectPositionals(positionals, 2, 'hash calibrate')
  return calibrateHash
}

async function calibrateHash (store: AccountStore, options: Options, out: Output, { config }: Context) {
  // Loaded only now: the other commands do not start a hashing thread's modules.
  const [{ createHashingPool }, { calibrate, HASH_PARAMETERS_SETTING, parseParameters, serializeParameters }] = await Promise.all([
    import('../../core/passwords/hashing-pool.js'), import('../../core/passwords/parameters.js')
  ])
  const targetMs = config.passwordHashTargetMs
  const previous = parseParameters(await store.readSetting(HASH_PARAMETERS_SETTING))
  const pool = createHashingPool({ size: 1 })
  try {
    const calibration = await calibrate(pool, targetMs)
    await store.writeSetting(HASH_PARAMETERS_SETTING, serializeParameters(calibration))
    const describe = ({ memoryCost, timeCost, parallelism }: { memoryCost: number, timeCost: number, parallelism: number }) => `m=${memoryCost},t=${timeCost},p=${parallelism}`
    print(out, options, { ...calibration, targetMs, previous: previous ?? null },
      `stored Argon2id ${describe(calibration)} (about ${calibration.expectedMs} ms a hash here, target ${targetMs} ms; was ${previous === undefined ? 'none' : describe(previous)}); instances use them after their next start and rehash each password at its next login`)
  } finally {
    await pool.close()
  }
}
