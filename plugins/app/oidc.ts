export { default } from '../../core/oidc/providers.js'
