import { execFile } from 'node:child_process'
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'

// scripts/build.mjs, the build behind `npm start`, on a small project of the same layout: it builds only
// when an input changed, into a folder of its own that dist is switched to at the end.
const run = promisify(execFile)
const BUILD_SCRIPT = new URL('../../scripts/build.mjs', import.meta.url)
const NODE_MODULES = new URL('../../node_modules', import.meta.url)

/** What the sources need of Node's console, declared here since the project loads no @types. */
const CONSOLE = 'declare const console: { log (message: string): void }\n'

function project (t: Test): string {
  const root = t.testdir({
    'package.json': JSON.stringify({ type: 'module' }),
    // No @types and only the ES library: tsc would otherwise load every @types package of the linked
    // node_modules, 10 s a build here instead of 1.
    'tsconfig.json': JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, rootDir: '.', outDir: 'dist', types: [], lib: ['es2022'] } }),
    'tsconfig.build.json': JSON.stringify({ extends: './tsconfig.json', include: ['src', 'core'] }),
    // As the service's: server.ts starts src/start.ts from the bundle the build makes of it (dist/start/).
    src: {
      'start.ts': `${CONSOLE}import { greeting } from '../core/greeting.js'\nexport function start (): void { console.log(greeting) }\n`,
      'server.ts': "const bundle = '../start/start.js'\nconst { start } = await import(bundle) as typeof import('./start.js')\nstart()\n",
      'cli.ts': `${CONSOLE}console.log("cli")\n`
    },
    core: { 'greeting.ts': "export const greeting = 'hello'\n" },
    routes: { pages: { public: { 'index.html': '<p>hello</p>\n' } } }
  })
  mkdirSync(join(root, 'scripts'))
  cpSync(BUILD_SCRIPT, join(root, 'scripts', 'build.mjs'))
  symlinkSync(NODE_MODULES, join(root, 'node_modules'))
  return root
}

const build = async (root: string) => (await run(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root })).stdout
const serve = async (root: string) => (await run(process.execPath, [join(root, 'dist', 'src', 'server.js')])).stdout.trim()
const builds = (root: string) => readdirSync(join(root, '.dist')).sort()

t.test('two builds started together both succeed and leave one whole build; a build with nothing changed does nothing', async (t) => {
  const root = project(t)
  const outputs = await Promise.all([build(root), build(root)])
  t.match(outputs.join(''), /dist is built/)
  t.equal(await serve(root), 'hello')
  t.ok(existsSync(join(root, 'dist', 'routes', 'pages', 'public', 'index.html')), 'the pages are copied beside the code')
  t.ok(existsSync(join(root, 'dist', 'start', 'start.js')), 'the server is bundled beside them')
  t.same(builds(root).length, 1, 'one build folder, no half-built leftovers')

  const link = readlinkSync(join(root, 'dist'))
  t.match(await build(root), /dist is up to date/)
  t.equal(readlinkSync(join(root, 'dist')), link, 'dist still points at the same build')
})

t.test('a changed source is built into a new folder, and the previous build stays for instances still running on it', async (t) => {
  const root = project(t)
  await build(root)
  const previous = join(root, readlinkSync(join(root, 'dist')))
  writeFileSync(join(root, 'core', 'greeting.ts'), "export const greeting = 'hello again'\n")
  t.match(await build(root), /dist is built/)
  t.equal(await serve(root), 'hello again')
  t.ok(existsSync(join(previous, 'src', 'server.js')), 'the previous build is whole')
  t.equal(builds(root).length, 2)
  writeFileSync(join(root, 'core', 'greeting.ts'), "export const greeting = 'third'\n")
  await build(root)
  t.equal(builds(root).length, 2, 'older builds are removed: the current one and the one before stay')
  t.notOk(existsSync(previous), 'the oldest build is gone')
})

t.test('the bundle holds only Latin-1 characters, and text beyond it still reads the same', async (t) => {
  // V8 keeps a script's source in two bytes a character when one character is beyond Latin-1: a dash
  // in a dependency's comment doubled the service's bundle in memory (scripts/build.mjs, latin1Only).
  const root = project(t)
  writeFileSync(join(root, 'core', 'greeting.ts'), [
    'export class Greeter {',
    '  /** Bits 64–71 — the reserved ones. */',
    "  greet (): string { return 'héllo — 64–71 ✓' }",
    '}',
    'export const greeting = new Greeter().greet()',
    ''
  ].join('\n'))
  await build(root)
  t.equal(await serve(root), 'héllo — 64–71 ✓', 'strings are unchanged')
  const folder = join(root, 'dist', 'start')
  for (const file of readdirSync(folder).filter((name) => name.endsWith('.js'))) {
    const beyond = [...readFileSync(join(folder, file), 'utf8')].filter((character) => character.codePointAt(0)! > 0xff)
    t.same(beyond, [], `${file} has no character beyond Latin-1`)
  }
})
