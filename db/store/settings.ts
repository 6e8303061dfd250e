/** Named values the instances share (hash parameters, the provider state key). */
export interface SettingsStore {
  /** A shared setting the service decided for itself (e.g. the calibrated password-hash parameters), or undefined. */
  readSetting (name: string): Promise<string | undefined>
  /** Stores a setting; when `onlyIfNone`, only if it has no value yet (instances starting together keep the first). */
  writeSetting (name: string, value: string, options?: { onlyIfNone?: boolean }): Promise<void>
}
