import type { MailMessage } from '../db/store.js'
import type { Client } from './events/types.js'

/*
 * The text of every mail the service sends. Links carry their token in the
 * fragment (#token=…): a browser never sends the fragment to a server, so the
 * token reaches no access log, proxy or Referer header.
 */

function minutes (seconds: number): string {
  const count = Math.max(1, Math.round(seconds / 60))
  return count === 1 ? '1 minute' : `${count} minutes`
}

export function resetMail (to: string, link: string, ttlSeconds: number): MailMessage {
  return {
    to,
    subject: 'Reset your password',
    text: `Someone asked to reset the password of the account of ${to}.\n\n` +
      `To choose a new password, open this link within ${minutes(ttlSeconds)}:\n\n${link}\n\n` +
      'The link works once. If you did not ask for it, ignore this mail: your password stays as it is.\n'
  }
}

/**
 * A sign-in code: typed (or pasted) where the sign-in started, on any device, or filled in by the link. `link`
 * carries it in the fragment too. Worded the same whether or not the address has an account: the mail itself
 * tells a reader of the inbox nothing the code would not.
 */
export function signInCodeMail (to: string, code: string, link: string, ttlSeconds: number): MailMessage {
  return {
    to,
    subject: 'Your sign-in code',
    text: `Your code to sign in as ${to} is:\n\n    ${code}\n\n` +
      `Type it where you asked for it within ${minutes(ttlSeconds)}, or open this link on the same device:\n\n${link}\n\n` +
      'The code works once, and only the newest one mailed works. Nobody from us will ask you for it. ' +
      'If you did not ask for it, ignore this mail: without the code nobody signs in.\n'
  }
}

/** An account an administrator made for `to`: the link (a password-reset token) sets its first password. */
export function invitationMail (to: string, link: string, ttlSeconds: number): MailMessage {
  return {
    to,
    subject: 'You have been invited: choose your password',
    text: `An administrator created an account for ${to}.\n\n` +
      `To choose its password, open this link within ${minutes(ttlSeconds)}:\n\n${link}\n\n` +
      'The link works once. If you did not expect this invitation, ignore this mail: nobody can sign in to the account without the link.\n'
  }
}

/**
 * An invitation to an organisation (POST /orgs/:orgId/invitations): the link opens the page that signs in or up as
 * `to` and accepts. The organisation's and the inviter's names are theirs to choose, so the mail says whose words they are.
 */
export function organisationInvitationMail (to: string, invitation: { orgName: string, inviterName: string, role: string }, link: string, ttlSeconds: number): MailMessage {
  const days = Math.max(1, Math.round(ttlSeconds / 86_400))
  return {
    to,
    subject: 'You are invited to join an organisation',
    text: `${invitation.inviterName} invites ${to} to join the organisation "${invitation.orgName}" as ${invitation.role}.\n\n` +
      `To accept, open this link within ${days === 1 ? '1 day' : `${days} days`} and sign in (or sign up) as ${to}:\n\n${link}\n\n` +
      'The link works once. If you do not know the sender, ignore this mail: nothing happens without the link.\n'
  }
}

export function verificationMail (to: string, link: string, ttlSeconds: number): MailMessage {
  return {
    to,
    subject: 'Verify your email address',
    text: `Please confirm that ${to} is your address by opening this link within ${minutes(ttlSeconds)}:\n\n${link}\n\n` +
      'If you did not create an account or change its address, ignore this mail.\n'
  }
}

/** Sent to the previous address after an email change: the one warning an owner gets if it was not them. */
export function emailChangedNotice (previousEmail: string, newEmail: string, at: Date, client: Client): MailMessage {
  return {
    to: previousEmail,
    subject: 'The email address of your account was changed',
    text: `On ${at.toUTCString()} the email address of your account was changed from ${previousEmail} to ${newEmail}.\n\n` +
      `The change was made from the address ${client.ip ?? 'unknown'} with ${client.userAgent ?? 'an unknown device'}.\n` +
      'Every session of the account was ended, and every password-reset or verification link mailed before is void.\n\n' +
      'If this was you, nothing needs doing.\n' +
      'If it was not you, someone else can sign in to your account: reply to this mail or contact support at once, ' +
      'quoting this mail, so that the change can be undone and your account recovered.\n'
  }
}

/** A change to how the account is signed in to, told to its owner: the one warning if it was not them. */
export type SignInMethodChange =
  | { kind: 'passkey_added', name: string }
  | { kind: 'totp_disabled' }
  /** An administrator (or the operator's CLI) turned it off: support for a lost authenticator. */
  | { kind: 'totp_reset' }
  | { kind: 'identity_linked', provider: string, passwordCleared?: boolean }

/** The subject, and what happened (a clause after "On <date>"), of each change. */
function describe (change: SignInMethodChange): { subject: string, what: string } {
  switch (change.kind) {
    case 'passkey_added':
      return {
        subject: 'A passkey was added to your account',
        what: `a passkey named "${change.name}" was added to your account: it signs in without the password`
      }
    case 'totp_disabled':
      return {
        subject: 'Two-step sign-in was turned off',
        what: 'the authenticator app (TOTP) of your account was turned off, its recovery codes with it: a sign-in no longer asks for a code'
      }
    case 'totp_reset':
      return {
        subject: 'An administrator turned off two-step sign-in',
        what: 'an administrator turned off the authenticator app (TOTP) of your account, its recovery codes with it, ' +
          'as support does for a lost authenticator: a sign-in no longer asks for a code'
      }
    case 'identity_linked':
      return {
        subject: 'A sign-in provider was linked to your account',
        what: `a sign-in with the provider "${change.provider}" was linked to your account: it signs in without the password` +
          // The link cleared a password the one signing in never showed (docs/accounts.md): say how to have one again.
          (change.passwordCleared === true ? '. The account\'s password and passkeys were removed and every session ended; "Forgot password" sets a new password' : '')
      }
  }
}

/** Sent to the account's address when a way to sign in is added or a second factor removed. */
export function signInMethodNotice (to: string, change: SignInMethodChange, at: Date, client: Client): MailMessage {
  const { subject, what } = describe(change)
  return {
    to,
    subject,
    text: `On ${at.toUTCString()} ${what}.\n\n` +
      `The change was made from the address ${client.ip ?? 'unknown'} with ${client.userAgent ?? 'an unknown device'}.\n\n` +
      'If this was you, nothing needs doing.\n' +
      'If it was not you, someone else can sign in to your account: reset your password, end every session from the account page, ' +
      'and remove what you did not add (or reply to this mail to reach support).\n'
  }
}

/** Sent when the second factor locks after `wrongCodes` wrong codes: someone who knows the password is guessing the code. */
export function mfaLockedMail (to: string, wrongCodes: number): MailMessage {
  return {
    to,
    subject: 'Your account\'s second factor was locked',
    text: `${wrongCodes} wrong codes were entered at the second step of sign-ins to the account of ${to} since the last right one.\n\n` +
      'Only someone who knows your password gets that far. To keep them from guessing further, the second step now refuses ' +
      'every code, the right one included, until the password is reset.\n\n' +
      'Ask for a password reset link ("Forgot password"), choose a new password you use nowhere else, then sign in with your code. ' +
      'If the wrong codes were not yours, your old password is known to someone else.\n'
  }
}
