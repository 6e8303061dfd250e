// Preloaded into a process under bench/request-cost.ts (node --import): answers IPC messages with its own
// CPU time (process.cpuUsage, µs) and, for a profile of a timed window alone, starts and stops V8's
// profiler through the inspector (no setup or warm-up in it, unlike --cpu-prof's whole-process profile).
import { readFileSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector'

let session
const post = (method, params) => new Promise((resolve, reject) => {
  session.post(method, params, (error, result) => { if (error === null) resolve(result); else reject(error) })
})

/** The kernel's clock ticks a second (`getconf CLK_TCK`: 100 on Linux x86-64), the unit of /proc's CPU times. */
const TICKS_PER_SECOND = 100

/** The main thread's own CPU time (µs), the event loop's: utime + stime of its task in /proc (Linux), else undefined. */
function mainThreadCpu () {
  try {
    const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 1e6 / TICKS_PER_SECOND
  } catch {
    return undefined
  }
}

process.on('message', async (message) => {
  if (message === 'cpu') {
    const { user, system } = process.cpuUsage()
    process.send?.({ usage: { cpu: user + system, system, main: mainThreadCpu() } })
  } else if (message === 'profile-start') {
    session ??= new Session()
    session.connect()
    await post('Profiler.enable')
    await post('Profiler.setSamplingInterval', { interval: Number(process.env.PROFILE_INTERVAL_US ?? 500) })
    await post('Profiler.start')
    process.send?.({ profiling: true })
  } else if (typeof message === 'object' && message?.profileStop !== undefined) {
    const { profile } = await post('Profiler.stop')
    writeFileSync(message.profileStop, JSON.stringify(profile))
    session.disconnect()
    process.send?.({ profiled: message.profileStop })
  }
})
