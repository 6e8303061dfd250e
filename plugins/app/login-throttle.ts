export { default } from '../../core/lockout/login-throttle.js'
