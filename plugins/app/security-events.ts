export { default } from '../../core/events/security-events.js'
