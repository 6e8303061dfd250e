// Start-to-ready of the service, for bench/results/notes.md: the time from spawning a command to its
// "account service ready" log line (listening, migrations applied, keys loaded), median of
// several starts on one store (one unmeasured start first creates and migrates it).
//   node scripts/measure-start.mjs [runs] -- <command> [args]
//   e.g. node scripts/measure-start.mjs 9 -- build/account-service
//        node scripts/measure-start.mjs 9 -- node dist/src/server.js   (what `npm start` runs after building)
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const separator = process.argv.indexOf('--')
if (separator === -1 || separator + 1 >= process.argv.length) {
  console.error('usage: node scripts/measure-start.mjs [runs] -- <command> [args]')
  process.exit(2)
}
const runs = Number(process.argv[2] === '--' ? 9 : process.argv[2])
const [command, ...args] = process.argv.slice(separator + 1)
const folder = mkdtempSync(join(tmpdir(), 'account-start-'))
const env = { ...process.env, NODE_ENV: 'production', PORT: '0', LOG_LEVEL: 'info', DATABASE_URL: join(folder, 'accounts.db') }

async function startOnce () {
  const began = process.hrtime.bigint()
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  let ready
  child.stdout.on('data', (chunk) => {
    output += chunk
    if (ready === undefined && output.includes('"msg":"account service ready"')) {
      ready = Number(process.hrtime.bigint() - began) / 1e6
      child.kill('SIGTERM')
    }
  })
  await once(child, 'exit')
  if (ready === undefined) throw new Error(`${command} did not get ready:\n${output}`)
  return ready
}

try {
  await startOnce()
  const times = []
  for (let run = 0; run < runs; run++) times.push(await startOnce())
  times.sort((a, b) => a - b)
  const median = times[Math.floor(times.length / 2)]
  console.log(`${[command, ...args].join(' ')}: median ${Math.round(median)} ms over ${runs} starts (min ${Math.round(times[0])}, max ${Math.round(times.at(-1))})`)
} finally {
  rmSync(folder, { recursive: true, force: true })
}
