import type { SettingsStore } from '../../db/store.js'
import type { Argon2Parameters, Calibration, HashingPool } from './hashing-pool.js'

/** The settings row (db `settings`) that holds the Argon2id parameters every instance hashes with. */
export const HASH_PARAMETERS_SETTING = 'password_hash_parameters'

/** OWASP's minimum for Argon2id (19 MiB, 2 passes, 1 lane): calibration never goes below it. */
export const OWASP_MINIMUM: Argon2Parameters = { memoryCost: 19456, timeCost: 2, parallelism: 1 }

/** Measures Argon2id on a hashing thread: the parameters that take about `targetMs` here, never below OWASP's minimum. */
export async function calibrate (pool: HashingPool, targetMs: number): Promise<Calibration> {
  return JSON.parse(await pool.run({ op: 'calibrate', targetMs, minimum: OWASP_MINIMUM }) as string) as Calibration
}

/** The stored parameters, or undefined when none (or a row below the minimum, which is never used). */
export function parseParameters (value: string | undefined): Argon2Parameters | undefined {
  if (value === undefined) return undefined
  try {
    const { memoryCost, timeCost, parallelism } = JSON.parse(value) as Argon2Parameters
    const whole = [memoryCost, timeCost, parallelism].every(Number.isSafeInteger)
    if (!whole || memoryCost < OWASP_MINIMUM.memoryCost || timeCost < OWASP_MINIMUM.timeCost || parallelism < 1) return undefined
    return { memoryCost, timeCost, parallelism }
  } catch {
    return undefined
  }
}

export function serializeParameters ({ memoryCost, timeCost, parallelism }: Argon2Parameters): string {
  return JSON.stringify({ memoryCost, timeCost, parallelism })
}

/**
 * The parameters this instance hashes with: the stored ones; with none stored (the first start), a
 * calibration stored for every instance. Instances starting together keep whichever was stored first.
 */
export async function sharedParameters (store: SettingsStore, pool: HashingPool, targetMs: number): Promise<{ parameters: Argon2Parameters, calibration?: Calibration }> {
  const stored = parseParameters(await store.readSetting(HASH_PARAMETERS_SETTING))
  if (stored !== undefined) return { parameters: stored }
  // A target of 0 is the minimum itself: nothing to measure.
  const calibration = targetMs <= 0 ? { ...OWASP_MINIMUM, expectedMs: 0 } : await calibrate(pool, targetMs)
  await store.writeSetting(HASH_PARAMETERS_SETTING, serializeParameters(calibration), { onlyIfNone: true })
  return { parameters: parseParameters(await store.readSetting(HASH_PARAMETERS_SETTING)) ?? calibration, calibration }
}

/** The PHC string prefix these parameters produce, e.g. `$argon2id$v=19$m=19456,t=2,p=1$`. */
export function phcPrefix ({ memoryCost, timeCost, parallelism }: Argon2Parameters): string {
  return `$argon2id$v=19$m=${memoryCost},t=${timeCost},p=${parallelism}$`
}
