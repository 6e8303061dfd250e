export { default } from '../../core/passkeys/passkeys.js'
