/* eslint-disable no-unused-vars */
// Runs first in the single executable (the bundle's banner). Writes the
// embedded assets (native addons, migrations, the pages' and the docs' files) to a fresh
// temporary folder that is removed at exit, laid out as in the package, so
// that the bundled code finds them where it looks: see scripts/build-sea.mjs.
const __seaRoot = (function () {
  const sea = require('node:sea')
  const fs = require('node:fs')
  const os = require('node:os')
  const path = require('node:path')
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'account-service-'))
  for (const key of JSON.parse(sea.getAsset('manifest.json', 'utf8'))) {
    const file = path.join(root, key)
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, new Uint8Array(sea.getAsset(key)))
  }
  process.on('exit', () => fs.rmSync(root, { recursive: true, force: true }))
  return root
})()

/** import.meta.url of a module of the package, for the bundled code. */
function __seaUrl (file) {
  return require('node:url').pathToFileURL(require('node:path').join(__seaRoot, file)).href
}

/** Loads a native addon written out from the assets (SEA's require loads only built-in modules). */
function __seaAddon (file) {
  const module = { exports: {} }
  process.dlopen(module, require('node:path').join(__seaRoot, file))
  return module.exports
}
