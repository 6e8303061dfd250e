import { readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import ts from 'typescript'

// An eslint rule: the folders of one floor (core/accounts/, core/mfa/, ...; a file straight under the
// floor, core/config.ts, counts as a folder of its own) may import each other, but never in a loop.
// A loop of folders need not be a loop of files: core/schemas/mfa.ts once imported core/mfa/status.ts
// while core/mfa/mfa.ts reached core/schemas/auth.ts through core/sessions/ and core/tokens/, and no
// file imported itself back, so eslint-plugin-import's file-level no-cycle would not have seen it.
// Type-only imports count: they tie the folders as much as any other.
//
// An import from folder A to folder B of the same floor is refused when B leads back to A. What the
// other files import is read from disk (each file again only when it changed); the linted file's own
// imports come from its text as being linted.

const SOURCE = /\.(ts|mts|cts|js|mjs|cjs)$/

/** @type {Map<string, { stamp: string, specifiers: string[] }>} the relative imports of each file read, by path */
const readFiles = new Map()

function sourceFiles (folder) {
  return readdirSync(folder, { recursive: true, encoding: 'utf8' })
    .filter(path => SOURCE.test(path) && !path.endsWith('.d.ts'))
    .map(path => join(folder, path))
}

function relativeImports (file) {
  const { mtimeMs, size } = statSync(file)
  const stamp = `${mtimeMs} ${size}`
  const known = readFiles.get(file)
  if (known !== undefined && known.stamp === stamp) return known.specifiers
  // TypeScript's own scan of import, export ... from, import() and require(): comments and strings are not imports.
  const specifiers = ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles
    .map(imported => imported.fileName).filter(name => name.startsWith('.'))
  readFiles.set(file, { stamp, specifiers })
  return specifiers
}

/** The folder of the floor a path lies in ('accounts/'), or the file's own name for one straight under it ('config.ts'); undefined outside the floor. */
function folderOf (floorPath, path) {
  const parts = relative(floorPath, path).split(sep)
  if (parts[0] === '..' || parts[0] === '') return undefined
  return parts.length > 1 ? `${parts[0]}/` : parts[0].replace(/\.[cm]?js$/, '.ts')
}

/** Folder -> folder it imports -> the first import found that ties them, as [importing file, imported path]. */
function folderImports (floorPath) {
  const imports = new Map()
  for (const file of sourceFiles(floorPath)) {
    const from = folderOf(floorPath, file)
    for (const specifier of relativeImports(file)) {
      const target = resolve(dirname(file), specifier)
      const to = folderOf(floorPath, target)
      if (to === undefined || to === from) continue
      if (!imports.has(from)) imports.set(from, new Map())
      if (!imports.get(from).has(to)) imports.get(from).set(to, [file, target])
    }
  }
  return imports
}

/** The imports by which `start` leads to `goal`, shortest first found; undefined when it does not. */
function wayBack (imports, start, goal) {
  const cameBy = new Map([[start, undefined]])
  const queue = [start]
  while (queue.length > 0) {
    const folder = queue.shift()
    for (const [next, tie] of imports.get(folder) ?? []) {
      if (cameBy.has(next)) continue
      cameBy.set(next, { from: folder, tie })
      if (next === goal) {
        const way = []
        for (let at = goal; at !== start; at = cameBy.get(at).from) way.unshift(cameBy.get(at).tie)
        return way
      }
      queue.push(next)
    }
  }
  return undefined
}

export default {
  meta: {
    type: 'problem',
    docs: { description: 'Refuses an import that closes a loop between the folders of one floor (docs/architecture.md)' },
    schema: [{
      type: 'object',
      properties: {
        allow: {
          description: 'Pairs of folders, as paths from the project root, that may import each other for now: each names why in the config',
          type: 'array',
          items: { type: 'array', items: { type: 'string' }, minItems: 2, maxItems: 2 }
        }
      },
      additionalProperties: false
    }],
    messages: {
      loop: '{{from}} imports {{to}}, which leads back to {{from}} ({{way}}): folders of one floor may not import each other in a loop; ' +
        'move what both need to or below the lower one (docs/architecture.md).'
    }
  },

  create (context) {
    const root = context.cwd
    const file = context.filename
    const [floor, ...rest] = relative(root, file).split(sep)
    if (rest.length === 0 || floor === '..') return {}
    const floorPath = join(root, floor)
    const here = folderOf(floorPath, file)
    const named = folder => `${floor}/${folder}`
    // A pair is named as paths ('core/events'), a folder here as 'core/events/': compared without the slash.
    const pairOf = (a, b) => `${a.replace(/\/$/, '')} ${b.replace(/\/$/, '')}`
    const allowed = new Set((context.options[0]?.allow ?? []).flatMap(([a, b]) => [pairOf(a, b), pairOf(b, a)]))
    let imports

    function check (source) {
      if (typeof source?.value !== 'string' || !source.value.startsWith('.')) return
      const there = folderOf(floorPath, resolve(dirname(file), source.value))
      if (there === undefined || there === here || allowed.has(pairOf(named(here), named(there)))) return
      imports ??= folderImports(floorPath)
      const way = wayBack(imports, there, here)
      if (way === undefined) return
      context.report({
        node: source,
        messageId: 'loop',
        data: {
          from: named(here),
          to: named(there),
          way: way.map(([importer, imported]) => `${relative(root, importer)} imports ${relative(root, imported)}`).join(', ')
        }
      })
    }

    return {
      ImportDeclaration: node => check(node.source),
      ExportNamedDeclaration: node => check(node.source),
      ExportAllDeclaration: node => check(node.source),
      ImportExpression: node => check(node.source)
    }
  }
}
