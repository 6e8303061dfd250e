import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isPostgresUrl, openStore } from '../db/open.js'

/*
 * What following the revocation log by polling costs an instance (core/revocations/revocations.ts polls
 * every 200 ms): the process CPU and wall time of one empty poll, on SQLite and, where
 * POLL_COST_DATABASE_URL names one (migrated), on PostgreSQL. `npx tsx bench/poll-cost.ts`.
 * The answer decided issue 14's "LISTEN/NOTIFY, or polling alone if it measures as cheap".
 */
const POLLS = 2000
const folder = mkdtempSync(join(tmpdir(), 'poll-cost-'))
const urls = [join(folder, 'accounts.db'), process.env.POLL_COST_DATABASE_URL].filter((url): url is string => url !== undefined)
for (const url of urls) {
  const store = await openStore(url)
  const since = new Date(Date.now() - 15 * 60_000)
  const poll = () => store.readRevocations(Number.MAX_SAFE_INTEGER, since, 10_000)
  for (let warmup = 0; warmup < 200; warmup++) await poll()
  const cpuBefore = process.cpuUsage()
  const startedAt = process.hrtime.bigint()
  for (let round = 0; round < POLLS; round++) await poll()
  const wallMs = Number(process.hrtime.bigint() - startedAt) / 1e6 / POLLS
  const cpu = process.cpuUsage(cpuBefore)
  const cpuMs = (cpu.user + cpu.system) / 1000 / POLLS
  const name = isPostgresUrl(url) ? 'PostgreSQL' : 'SQLite'
  console.log(`${name}: ${wallMs.toFixed(3)} ms wall and ${cpuMs.toFixed(3)} ms CPU per empty poll; 5 polls a second take ${(cpuMs * 5 / 10).toFixed(2)}% of a core`)
  await store.close()
}
rmSync(folder, { recursive: true, force: true })
