import { hash as argon2Hash } from '@node-rs/argon2'
import bcrypt from 'bcryptjs'
import { execFile } from 'node:child_process'
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { pbkdf2Sync, randomBytes, scryptSync } from 'node:crypto'
import { once } from 'node:events'
import { promisify } from 'node:util'
import { runAdmin } from '../src/admin.js'

/*
 * npm run bench:import: BENCH_IMPORT_USERS (100,000) generated users imported into a fresh SQLite file through
 * the CLI's path (`account-service users import FILE`, NDJSON), in a child process of its own so that its peak
 * RSS (process.resourceUsage().maxRSS) is the import's and not the generator's. Every user has a password hash,
 * the four families in turn (bcrypt cost 4, Argon2id, scrypt, PBKDF2-SHA256), drawn from a few precomputed ones:
 * an import parses and checks a hash, it never computes one, so its cost does not depend on the hash's own.
 * Every 1,000th line is broken, to count skips too. Writes BENCH_OUT (bench/results)/import.json.
 */

interface ImportRun {
  users: number
  fileBytes: number
  imported: number
  skipped: number
  ms: number
  usersPerSecond: number
  maxRssMiB: number
  rssBeforeMiB: number
  heapUsedAfterMiB: number
  heapCapMiB: number | null
}

const MiB = 1024 * 1024

if (process.argv[2] === '--child') {
  // The measured process: the CLI's own entry point, in process, then its resource usage.
  const [file, database] = process.argv.slice(3)
  const rssBefore = process.memoryUsage().rss
  const started = performance.now()
  const lines: string[] = []
  const code = await runAdmin(['users', 'import', file, '--json', '--database', database], { out: line => { lines.push(line) }, err: line => { process.stderr.write(`${line}\n`) } })
  const ms = performance.now() - started
  if (code !== 0) process.exit(code)
  const { imported, skipped_count: skipped } = JSON.parse(lines.join('\n')) as { imported: number, skipped_count: number }
  process.stdout.write(JSON.stringify({ imported, skipped, ms, maxRssKiB: process.resourceUsage().maxRSS, rssBefore, heapUsed: process.memoryUsage().heapUsed }))
} else {
  const users = Number(process.env.BENCH_IMPORT_USERS ?? 100_000)
  const outDir = resolve(process.env.BENCH_OUT ?? fileURLToPath(new URL('./results', import.meta.url)))
  const workDir = mkdtempSync(join(tmpdir(), 'account-bench-import-'))
  try {
    const file = join(workDir, 'users.ndjson')
    const generating = performance.now()
    await generate(file, users)
    console.log(`generated ${users.toLocaleString('en')} users (${(statSync(file).size / MiB).toFixed(1)} MiB of NDJSON) in ${Math.round(performance.now() - generating)} ms`)
    // BENCH_IMPORT_HEAP_MIB caps the child's V8 heap: an import that streams completes under a small cap.
    const heap = process.env.BENCH_IMPORT_HEAP_MIB === undefined ? [] : [`--max-old-space-size=${process.env.BENCH_IMPORT_HEAP_MIB}`]
    const { stdout } = await promisify(execFile)(process.execPath, [...heap, '--import', 'tsx', fileURLToPath(import.meta.url), '--child', file, join(workDir, 'accounts.db')], { maxBuffer: 16 * MiB })
    const child = JSON.parse(stdout) as { imported: number, skipped: number, ms: number, maxRssKiB: number, rssBefore: number, heapUsed: number }
    const run: ImportRun = {
      users,
      fileBytes: statSync(file).size,
      imported: child.imported,
      skipped: child.skipped,
      ms: Math.round(child.ms),
      usersPerSecond: Math.round(child.imported / child.ms * 1000),
      maxRssMiB: Math.round(child.maxRssKiB / 1024),
      rssBeforeMiB: Math.round(child.rssBefore / MiB),
      heapUsedAfterMiB: Math.round(child.heapUsed / MiB),
      heapCapMiB: process.env.BENCH_IMPORT_HEAP_MIB === undefined ? null : Number(process.env.BENCH_IMPORT_HEAP_MIB)
    }
    console.log(`imported ${run.imported.toLocaleString('en')}, skipped ${run.skipped} in ${run.ms} ms (${run.usersPerSecond.toLocaleString('en')} users/s); ` +
      `peak RSS ${run.maxRssMiB} MiB (${run.rssBeforeMiB} MiB before the import started; V8 heap in use after it ${run.heapUsedAfterMiB} MiB` +
      `${run.heapCapMiB === null ? '' : `, capped at ${run.heapCapMiB} MiB`})`)
    mkdirSync(outDir, { recursive: true })
    writeFileSync(join(outDir, 'import.json'), JSON.stringify({ date: new Date().toISOString(), node: process.version, ...run }, null, 2) + '\n')
  } finally {
    rmSync(workDir, { recursive: true, force: true })
  }
}

/** The NDJSON file: written as a stream (the generator holds no more than the import does). */
async function generate (file: string, users: number): Promise<void> {
  const b64 = (bytes: Buffer) => bytes.toString('base64').replace(/=+$/, '')
  const pool = 8
  const hashes: string[][] = [
    Array.from({ length: pool }, (_, index) => bcrypt.hashSync(`password ${index}`, 4)),
    await Promise.all(Array.from({ length: pool }, async (_, index) => await argon2Hash(`password ${index}`, { memoryCost: 19456, timeCost: 2, parallelism: 1 }))),
    Array.from({ length: pool }, (_, index) => {
      const salt = randomBytes(16)
      return `$scrypt$ln=14,r=8,p=1$${b64(salt)}$${b64(scryptSync(`password ${index}`, salt, 32, { N: 2 ** 14, r: 8, p: 1 }))}`
    }),
    Array.from({ length: pool }, (_, index) => {
      const salt = randomBytes(16)
      return `$pbkdf2-sha256$i=600000,l=32$${b64(salt)}$${b64(pbkdf2Sync(`password ${index}`, salt, 600_000, 32, 'sha256'))}`
    })
  ]
  const out = createWriteStream(file)
  for (let index = 1; index <= users; index++) {
    const line = index % 1000 === 0
      ? '{"email": "broken'
      : JSON.stringify({
        email: `user${index}@import.example`,
        first_name: 'Imported',
        last_name: `User ${index}`,
        username: `imported${index}`,
        password_hash: hashes[index % 4][index % pool],
        email_verified: index % 2 === 0
      })
    if (!out.write(line + '\n')) await once(out, 'drain')
  }
  out.end()
  await once(out, 'finish')
}
