import packageJson from '../package.json' with { type: 'json' }

/** The package's version, for the OpenAPI document. */
export const VERSION: string = packageJson.version

/**
 * What `account-service --version` prints: the package's version and the Node it runs on,
 * which for the single executable is the Node embedded in it (scripts/node-runtime.mjs).
 */
export const VERSION_LINE = `account-service ${VERSION} (Node ${process.version})`
