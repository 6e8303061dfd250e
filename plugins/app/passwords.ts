export { default } from '../../core/passwords/passwords.js'
