export { default } from '../../core/mfa/mfa.js'
