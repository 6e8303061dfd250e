export { default } from '../../core/authentication/authentication.js'
