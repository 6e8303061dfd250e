import packageJson from '../package.json' with { type: 'json' }

/** The package's version, for the OpenAPI document and `account-service --version`. */
export const VERSION: string = packageJson.version
