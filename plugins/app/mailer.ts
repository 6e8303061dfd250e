export { default } from '../../core/mail/mailer.js'
