import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { createWriteStream, readFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { fileURLToPath, pathToFileURL } from 'node:url'

const READY_SIGNAL = fileURLToPath(new URL('./ready-signal.mjs', import.meta.url))
const HELLO_WORLD = fileURLToPath(new URL('./hello-world.mjs', import.meta.url))
const SIGNING_FLOOR = fileURLToPath(new URL('./signing-floor.mjs', import.meta.url))
const HASH_RATE = fileURLToPath(new URL('./hash-rate.ts', import.meta.url))

/**
 * How `npm start` runs the service, read from the build's own package.json: its V8 flags (config.nodeFlags) and
 * the environment it sets (config.processEnv, `NAME=value` pairs: glibc's malloc settings, read before any code runs).
 */
export function startOf (entry: string): { flags: string[], environment: Record<string, string> } {
  const { config } = JSON.parse(readFileSync(new URL('../../package.json', pathToFileURL(entry)), 'utf8')) as { config?: { nodeFlags?: string, processEnv?: string } }
  const words = (line: string | undefined) => line?.split(' ').filter((word) => word !== '') ?? []
  const environment = Object.fromEntries(words(config?.processEnv).map((pair) => {
    const at = pair.indexOf('=')
    if (at < 1) throw new Error(`package.json config.processEnv: "${pair}" is not NAME=value`)
    return [pair.slice(0, at), pair.slice(at + 1)]
  }))
  return { flags: words(config?.nodeFlags), environment }
}

export interface Running {
  url: string
  pid: number
  /** From spawn to the port being known: Node's start, the app's plugins, migrations, listen. */
  readyMs: number
  /** Resident set size now, in MB (Linux /proc). */
  rssMb (): number
  stop (): Promise<void>
}

export interface ServiceOptions {
  /** The build's entry point (bench/builds.ts): dist/src/server.js of this tree or of the base. */
  entry: string
  variant: 'header' | 'cookie'
  databaseFile: string
  /** Where `--cpu-prof` writes this process's profile, when profiling. */
  profileDir?: string
  /** More settings, over the benchmark's own (a measurement's METRICS_PORT, say). */
  environment?: Record<string, string>
}

/** A port free on 127.0.0.1 now (the OS's pick), for a service that must know its address before it listens. */
export async function freePort (): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  await once(server, 'close')
  return port
}

/**
 * The service as `npm start` runs it (dist/), with the settings a benchmark needs, on a free port.
 * PUBLIC_URL is its own address (localhost: production takes no other plain-HTTP origin), so that
 * the OAuth provider's issuer, and the audience of the tokens it signs, are where it is reached.
 */
export async function startService ({ entry, variant, databaseFile, profileDir, environment: extra = {} }: ServiceOptions): Promise<Running> {
  const port = await freePort()
  const environment: Record<string, string> = {
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    PUBLIC_URL: `http://localhost:${port}`,
    API_VARIANT: variant,
    DATABASE_URL: databaseFile,
    RATE_LIMIT_ENABLED: 'false',
    LOG_LEVEL: 'warn',
    // OWASP's minimum, as the raw Argon2id baseline hashes: login's ratio compares like with like.
    PASSWORD_HASH_TARGET: '0ms',
    ...extra
  }
  const profile = profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]
  const start = startOf(entry)
  return await startProcess([...start.flags, ...serviceFlags(), ...profile, '--import', READY_SIGNAL, entry], { ...start.environment, ...environment })
}

/** Node flags for the service's process from BENCH_SERVICE_FLAGS (say `--trace-gc`), after the build's own, for a look inside. */
function serviceFlags (): string[] {
  return process.env.BENCH_SERVICE_FLAGS?.split(' ').filter((flag) => flag !== '') ?? []
}

/** The ceiling: a bare Fastify hello-world in its own process. */
export function startHelloWorld (profileDir?: string): Promise<Running> {
  return startReference(HELLO_WORLD, profileDir)
}

/** The floor of a refresh: hello-world that signs one access token a request, as the service does. */
export function startSigningFloor (profileDir?: string): Promise<Running> {
  return startReference(SIGNING_FLOOR, profileDir)
}

function startReference (script: string, profileDir?: string): Promise<Running> {
  const profile = profileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${profileDir}`]
  return startProcess([...profile, script], {})
}

/** Raw Argon2id hashes per second at the service's parameters, in a process of its own. */
export async function measureHashRate (warmupSeconds: number, seconds: number, inFlight: number): Promise<number> {
  const child = spawn(process.execPath, ['--import', 'tsx', HASH_RATE, String(warmupSeconds), String(seconds), String(inFlight)], {
    env: childEnvironment({}),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc']
  })
  const [message] = await once(child, 'message') as [{ perSecond: number }]
  await once(child, 'exit')
  return message.perSecond
}

/** PATH and the libuv pool size pass through, so that the service and the raw hash rate share one pool size. */
function childEnvironment (environment: Record<string, string>): NodeJS.ProcessEnv {
  const { PATH, UV_THREADPOOL_SIZE } = process.env
  return { PATH, ...(UV_THREADPOOL_SIZE === undefined ? {} : { UV_THREADPOOL_SIZE }), ...environment }
}

async function startProcess (args: string[], environment: Record<string, string>): Promise<Running> {
  const started = process.hrtime.bigint()
  const child = spawn(process.execPath, args, { env: childEnvironment(environment), stdio: ['ignore', 'pipe', 'pipe', 'ipc'] })
  // What it prints before it listens is kept for the error if it exits first; after that, only
  // BENCH_SERVICE_LOG keeps it (a --trace flag in BENCH_SERVICE_FLAGS prints a lot).
  let output = ''
  let listening = false
  const log = process.env.BENCH_SERVICE_LOG === undefined ? undefined : createWriteStream(process.env.BENCH_SERVICE_LOG, { flags: 'a' })
  const keep = (chunk: Buffer) => {
    log?.write(chunk)
    if (!listening) output += chunk
  }
  child.stdout?.on('data', keep)
  child.stderr?.on('data', keep)
  child.once('exit', () => log?.end())
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (message: { port: number }) => resolve(message.port))
    child.once('exit', (code) => reject(new Error(`${args.at(-1)} exited (${code}) before listening:\n${output}`)))
  })
  listening = true
  const readyMs = Number(process.hrtime.bigint() - started) / 1e6
  const pid = child.pid as number
  return {
    url: `http://127.0.0.1:${port}`,
    pid,
    readyMs,
    rssMb: () => residentMegabytes(pid),
    stop: () => stopProcess(child)
  }
}

async function stopProcess (child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGTERM')
  await once(child, 'exit')
}

function residentMegabytes (pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kilobytes = /^VmRSS:\s+(\d+) kB$/m.exec(status)
  return kilobytes === null ? Number.NaN : Number(kilobytes[1]) / 1024
}
