import { readFileSync } from 'node:fs'

// The password and mailed-code sign-in forms of the account console (account.html) and of an app's authorization
// (authorize.html, routes/oauth/interactions.ts): one source, public/sign-in-forms.html, that each page's route
// writes in where the page says <!--SIGN-IN-FORMS--> (account.js and authorize.js drive the same ids; email-code.js both).
const FORMS = new URL('./public/sign-in-forms.html', import.meta.url)

/** What a page says in its own words in the shared forms. */
export interface SignInFormsWording {
  /** The sign-in form's heading (HTML). */
  title: string
  /** Whether the sign-in form starts hidden (the authorization page shows it once it knows the app). */
  hidden: boolean
  /** Whether the code step mentions the mailed link, which fills the code in on the console (account.js). */
  mailedLink: boolean
}

/** `html` with the sign-in forms in place of its <!--SIGN-IN-FORMS--> line, indented as that line is. */
export function withSignInForms (html: string, { title, hidden, mailedLink }: SignInFormsWording): string {
  const forms = readFileSync(FORMS, 'utf8')
    .replace('%LOGIN-HIDDEN%', hidden ? ' hidden' : '')
    .replace('%LOGIN-TITLE%', () => title)
    .replace('%CODE-LINK%', mailedLink ? ', or open the link in the mail' : '')
    .trimEnd().split('\n')
  return html.replace(/^( *)<!--SIGN-IN-FORMS-->$/m, (_line, indent: string) => forms.map(line => line === '' ? line : indent + line).join('\n'))
}
