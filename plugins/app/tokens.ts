export { default } from '../../core/tokens/access-tokens.js'
