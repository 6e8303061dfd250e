export { default } from '../../core/identities/identities.js'
