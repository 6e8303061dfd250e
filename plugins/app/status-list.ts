export { default } from '../../core/revocations/status-lists.js'
