import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { ESLint, type Linter } from 'eslint'
import t, { type Test } from 'tap'
import { parser } from 'typescript-eslint'

// scripts/lint/no-folder-loop.mjs, the lint that refuses a loop between the folders of one floor, on
// small projects of the service's layout, then through the project's own eslint.config.js.
const RULE = new URL('../../scripts/lint/no-folder-loop.mjs', import.meta.url).href
const ROOT = fileURLToPath(new URL('../..', import.meta.url))

type Tree = Record<string, string | Record<string, string | Record<string, string>>>
type Allowed = Array<[string, string]>

/** What the rule says of each file of the project, file -> messages (files it accepts are left out). */
async function refusals (t: Test, tree: Tree, allow: Allowed = []): Promise<Record<string, string[]>> {
  const root = t.testdir(tree)
  const { default: rule } = await import(RULE)
  const eslint = new ESLint({
    cwd: root,
    overrideConfigFile: true,
    overrideConfig: [{
      files: ['**/*.ts'],
      languageOptions: { parser },
      plugins: { floors: { rules: { 'no-folder-loop': rule } } },
      rules: { 'floors/no-folder-loop': ['error', { allow }] }
    }]
  })
  const found: Record<string, string[]> = {}
  for (const result of await eslint.lintFiles(['**/*.ts'])) {
    const messages = result.messages.map(message => message.message)
    if (messages.length > 0) found[result.filePath.slice(root.length + 1)] = messages
  }
  return found
}

t.test('two folders that import each other are refused at both imports, type-only imports included', async (t) => {
  const found = await refusals(t, {
    core: {
      accounts: { 'account.ts': "import { rule } from '../mfa/mfa.js'\nexport const account = rule\n" },
      mfa: { 'mfa.ts': "import type { Actor } from '../accounts/account.js'\nexport const rule = 1\nexport type Used = Actor\n" }
    }
  })
  t.same(Object.keys(found).sort(), ['core/accounts/account.ts', 'core/mfa/mfa.ts'])
  t.match(found['core/mfa/mfa.ts'], [
    /^core\/mfa\/ imports core\/accounts\/, which leads back to core\/mfa\/ \(core\/accounts\/account\.ts imports core\/mfa\/mfa\.js\): .*move what both need to or below the lower one/
  ])
})

t.test('a loop through a file straight under the floor is refused, each import of it named', async (t) => {
  const found = await refusals(t, {
    core: {
      'config.ts': "export { rule } from './mfa/mfa.js'\n",
      schemas: { 'mfa.ts': "import { rule } from '../config.js'\nexport const schema = rule\n" },
      mfa: { 'mfa.ts': "export const rule = 1\nexport async function later () { return await import('../schemas/mfa.js') }\n" }
    }
  })
  t.same(Object.keys(found).sort(), ['core/config.ts', 'core/mfa/mfa.ts', 'core/schemas/mfa.ts'])
  t.match(found['core/schemas/mfa.ts'], [
    'core/schemas/ imports core/config.ts, which leads back to core/schemas/ ' +
    '(core/config.ts imports core/mfa/mfa.js, core/mfa/mfa.ts imports core/schemas/mfa.js)'
  ])
})

t.test('imports one way, files of one folder importing each other, imports out of the floor and import-shaped text are let through', async (t) => {
  const found = await refusals(t, {
    db: { 'store.ts': "import { rule } from '../core/mfa/mfa.js'\nexport const store = rule\n" },
    core: {
      schemas: { 'mfa.ts': "import { store } from '../../db/store.js'\nexport const schema = store\n" },
      mfa: {
        'mfa.ts': "import { schema } from '../schemas/mfa.js'\nimport { code } from './totp.js'\nexport const rule = schema + code\n",
        'totp.ts': "import { rule } from './mfa.js'\nexport const code = 1\nexport const later = () => rule\n"
      },
      accounts: {
        'account.ts': "import { rule } from '../mfa/mfa.js'\n// import '../schemas/mfa.js' once closed a loop\nexport const text = `import '../accounts/account.js'`\nexport const account = rule\n"
      }
    }
  })
  t.same(found, {}, 'db/ importing core/ is the floor rule\'s to refuse, not this one\'s')
})

t.test('an allowed pair may import each other; a longer loop through it is still refused', async (t) => {
  const tree = {
    core: {
      events: { 'events.ts': "import type { Webhooks } from '../webhooks/webhooks.js'\nexport type Hooks = Webhooks\nexport const TYPES = ['login']\n" },
      webhooks: { 'webhooks.ts': "import { TYPES } from '../events/events.js'\nexport interface Webhooks { types: typeof TYPES }\n" }
    }
  }
  t.same(await refusals(t, tree, [['core/events', 'core/webhooks']]), {})
  t.same(Object.keys(await refusals(t, tree)).sort(), ['core/events/events.ts', 'core/webhooks/webhooks.ts'], 'refused when not allowed')

  const longer = await refusals(t, {
    core: {
      ...tree.core,
      webhooks: { 'webhooks.ts': "import { TYPES } from '../events/events.js'\nimport '../mail/mailer.js'\nexport interface Webhooks { types: typeof TYPES }\n" },
      mail: { 'mailer.ts': "import { TYPES } from '../events/events.js'\nexport const mailed = TYPES\n" }
    }
  }, [['core/events', 'core/webhooks']])
  t.same(Object.keys(longer).sort(), ['core/mail/mailer.ts', 'core/webhooks/webhooks.ts'])
  t.match(longer['core/webhooks/webhooks.ts'], [/^core\/webhooks\/ imports core\/mail\//])
})

t.test('the project\'s lint refuses an import that closes a loop in core/, and lets the events and webhooks pair through until it is reworked', async (t) => {
  const eslint = new ESLint({ cwd: ROOT })
  const loopsIn = async (path: string, text: string) => (await eslint.lintText(text, { filePath: `${ROOT}${path}` }))
    .flatMap(result => result.messages).filter((message: Linter.LintMessage) => message.ruleId === 'floors/no-folder-loop')

  const totp = readFileSync(`${ROOT}core/mfa/totp.ts`, 'utf8')
  t.same(await loopsIn('core/mfa/totp.ts', totp), [], 'core/mfa/ as it stands')
  t.match(await loopsIn('core/mfa/totp.ts', `import '../accounts/account.js'\n${totp}`), [
    { line: 1, message: /^core\/mfa\/ imports core\/accounts\/, which leads back to core\/mfa\// }
  ])
  t.same(await loopsIn('core/events/security-events.ts', readFileSync(`${ROOT}core/events/security-events.ts`, 'utf8')), [])
})
