import { start } from './start.js'

// `npm start` runs this file; src/start.ts does the work.
await start()
