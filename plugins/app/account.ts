export { default } from '../../core/accounts/account.js'
