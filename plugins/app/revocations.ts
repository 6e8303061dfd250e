export { default } from '../../core/revocations/revocations.js'
