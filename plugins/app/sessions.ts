export { default } from '../../core/sessions/sessions.js'
