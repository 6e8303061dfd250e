import type { Measurement } from './load.js'
import type { Scenario } from './scenarios.js'

/** One build's figures in a scenario. */
export interface BuildResult {
  baseline: { label: string, median: Measurement, rounds: Measurement[] }
  target: { label: string, median: Measurement, rounds: Measurement[] }
  /** Median over the rounds of target/baseline (req/s, or p99 for `compare: 'p99'`). */
  ratio: number
  /** The ratio's goal, where one is set (the SVG's mark). */
  ratioGoal?: number
  goal: string
  /** Requests per second per core of the one service process, next to a published reference. */
  perCore?: { perSecond: number, goal: number, reference: string }
  /** RSS of the services the scenario loaded, right after it (the largest where it loaded several). */
  rssMb?: number
  met: boolean
}

/** Issue 23: every service under 150 MB of RSS after each scenario's load. */
export const RSS_GOAL_MB = 150

/** A scenario's figures: this tree's, and the base build's where the run had one (BENCH_BASE). */
export interface ScenarioResult extends BuildResult {
  id: string
  title: string
  compare: Scenario['compare']
  boundedBy?: Scenario['boundedBy']
  boundedGoal?: Scenario['boundedGoal']
  base?: BuildResult & { build: string }
}

export interface ProcessResult {
  /** Median spawn-to-listening time of restarts on an existing store. */
  startToReadyMs: number
  /** The same for hello-world: what Node and Fastify alone take on this machine. */
  helloWorldStartToReadyMs: number
  /** Resident memory of each service after its load. */
  rssMb: Record<string, number>
  /** The base build's figures, where the run had one. */
  base?: { startToReadyMs: number, rssMb: Record<string, number> }
}

export interface Results {
  date: string
  machine: { cpus: number, cpuModel: string, node: string, fastify: string, threadpool: string }
  settings: { connections: number, warmupSeconds: number, seconds: number, rounds: number, smallUsers: number, bigUsers: number, quick: boolean }
  /** The builds measured: this tree (`change`), then the base where BENCH_BASE named one. */
  builds: string[]
  /** The one-minute load average at the start (at most `max`) and at the end. */
  load: { before: number, after: number, max: number }
  scenarios: ScenarioResult[]
  process?: ProcessResult
}

const figure = (value: number, digits = 0) => Number.isFinite(value) ? value.toFixed(digits) : '–'

export function toMarkdown ({ date, machine, settings, builds, load, scenarios, process }: Results): string {
  const base = builds[1]
  const lines = [
    `Measured ${date} on ${machine.cpus} × ${machine.cpuModel}, Node ${machine.node}, Fastify ${machine.fastify}, libuv pool ${machine.threadpool}; ` +
    `${settings.connections} connections, ${settings.warmupSeconds} s warm-up + ${settings.seconds} s window, ${settings.rounds} alternating rounds, medians; ` +
    `small store ${settings.smallUsers.toLocaleString('en')} users, big store ${settings.bigUsers.toLocaleString('en')}.${settings.quick ? ' QUICK RUN: figures are indicative only.' : ''}`,
    `Load average (1 min): ${load.before.toFixed(2)} at the start (at most ${load.max}), ${load.after.toFixed(2)} at the end.` +
    (base === undefined ? '' : ` Base: ${base}, built beside this tree and measured in the same rounds (its ratio in the last column).`),
    '',
    `| scenario | req/s | p50 ms | p99 ms | errors | baseline | baseline req/s | baseline p99 ms | ratio | RSS after, MB | goal | met |${base === undefined ? '' : ' base ratio | base RSS, MB |'}`,
    `|---|--:|--:|--:|--:|---|--:|--:|--:|--:|---|:-:|${base === undefined ? '' : '--:|--:|'}`
  ]
  for (const { title, target, baseline, ratio, rssMb, goal, met, base: baseResult } of scenarios) {
    const t = target.median
    const b = baseline.median
    const baseColumns = baseResult === undefined ? '' : ` ${figure(baseResult.ratio, 2)} | ${figure(baseResult.rssMb ?? Number.NaN)} |`
    lines.push(`| ${title} | ${figure(t.requestsPerSecond)} | ${figure(t.p50)} | ${figure(t.p99)} | ${t.errors} | ${baseline.label} | ${figure(b.requestsPerSecond)} | ${figure(b.p99)} | ${figure(ratio, 2)} | ${figure(rssMb ?? Number.NaN)} | ${goal} | ${goal === '–' ? '–' : met ? 'yes' : '**no**'} |${baseColumns}`)
  }
  for (const { title, target, base: baseResult } of scenarios) {
    const alongside = target.median.alongside
    if (alongside === undefined) continue
    const baseAlongside = baseResult?.target.median.alongside
    lines.push('', `${title}: the ${alongside.label} run alongside got ${figure(alongside.requestsPerSecond)} req/s, p99 ${figure(alongside.p99)} ms` +
      (baseAlongside === undefined ? '.' : ` (base: ${figure(baseAlongside.requestsPerSecond)} req/s, p99 ${figure(baseAlongside.p99)} ms).`))
  }
  for (const { title, ratio, base: baseResult, boundedBy, boundedGoal } of scenarios) {
    const bound = scenarios.find((scenario) => scenario.id === boundedBy)
    if (bound === undefined) continue
    const share = (value: number, of: number) => figure(value / of, 2)
    const goal = boundedGoal === undefined ? '' : ` Goal ≥ ${boundedGoal}: ${ratio / bound.ratio >= boundedGoal ? 'met' : '**not met**'}.`
    lines.push('', `${title}: ${share(ratio, bound.ratio)} of the ratio of "${bound.title}" (${figure(bound.ratio, 2)}), measured in the same rounds, ` +
      `which does part of its work and nothing more${baseResult === undefined ? '' : ` (base: ${share(baseResult.ratio, bound.base?.ratio ?? bound.ratio)})`}.${goal}`)
  }
  const perCore = scenarios.filter((scenario) => scenario.perCore !== undefined)
  if (perCore.length > 0) {
    lines.push('', `| per core (this machine has ${machine.cpus} cores; the event loop is one, the hashing threads one per core) | per second per core | reference | goal | met |${base === undefined ? '' : ' base |'}`,
      `|---|--:|---|--:|:-:|${base === undefined ? '' : '--:|'}`)
    for (const { title, perCore: figures, target, base: baseResult } of perCore) {
      if (figures === undefined) continue
      const met = figures.perSecond >= figures.goal && target.median.errors === 0
      const baseColumn = baseResult === undefined ? '' : ` ${figure(baseResult.perCore?.perSecond ?? Number.NaN)} |`
      lines.push(`| ${title} | ${figure(figures.perSecond)} | ${figures.reference} | ≥ ${figures.goal.toLocaleString('en')} | ${met ? 'yes' : '**no**'} |${baseColumn}`)
    }
  }
  if (process !== undefined) {
    const baseValue = (value: number | undefined, unit: string) => process.base === undefined ? '' : ` ${value === undefined ? '–' : `${figure(value)} ${unit}`} |`
    lines.push('', `| process | value | goal | met |${process.base === undefined ? '' : ' base |'}`, `|---|--:|---|:-:|${process.base === undefined ? '' : '--:|'}`)
    lines.push(`| start to ready (spawn to listening, median of restarts) | ${figure(process.startToReadyMs)} ms | < 500 ms | ${process.startToReadyMs < 500 ? 'yes' : '**no**'} |${baseValue(process.base?.startToReadyMs, 'ms')}`)
    lines.push(`| start to ready of hello-world (the floor) | ${figure(process.helloWorldStartToReadyMs)} ms | | |${baseValue(process.helloWorldStartToReadyMs, 'ms')}`)
    for (const [service, rss] of Object.entries(process.rssMb)) {
      lines.push(`| RSS after every scenario, ${service} | ${figure(rss)} MB | | |${baseValue(process.base?.rssMb[service], 'MB')}`)
    }
  }
  return lines.join('\n') + '\n'
}

/** A horizontal bar per scenario: its ratio, with the goal marked; green where met. */
export function toSvg ({ scenarios }: Results): string {
  const rowHeight = 26
  const labelWidth = 360
  const barWidth = 420
  const top = 30
  const height = top + scenarios.length * rowHeight + 30
  const scale = Math.max(1.2, ...scenarios.flatMap(({ ratio, ratioGoal }) => [Number.isFinite(ratio) ? ratio : 0, ratioGoal ?? 0]))
  const x = (value: number) => labelWidth + Math.min(value, scale) / scale * barWidth
  const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
  const rows = scenarios.map(({ title, ratio, compare, ratioGoal, met }, index) => {
    const y = top + index * rowHeight
    const label = compare === 'p99' ? `${title} (p99 ratio, lower is better)` : title
    return [
      `<text x="${labelWidth - 8}" y="${y + 16}" text-anchor="end">${escape(label)}</text>`,
      `<rect x="${labelWidth}" y="${y + 4}" width="${(x(Number.isFinite(ratio) ? ratio : 0) - labelWidth).toFixed(1)}" height="16" fill="${met ? '#2e9e5b' : '#e0842b'}"/>`,
      ratioGoal === undefined ? '' : `<line x1="${x(ratioGoal).toFixed(1)}" x2="${x(ratioGoal).toFixed(1)}" y1="${y + 1}" y2="${y + 23}" stroke="#222" stroke-width="2"/>`,
      `<text x="${(x(ratio) + 4).toFixed(1)}" y="${y + 16}">${Number.isFinite(ratio) ? ratio.toFixed(2) : '–'}</text>`
    ].join('')
  })
  const ticks = [0, 0.25, 0.5, 0.75, 1, 1.5, 2, 3].filter((tick) => tick <= scale).map((tick) =>
    `<line x1="${x(tick).toFixed(1)}" x2="${x(tick).toFixed(1)}" y1="${top - 4}" y2="${height - 26}" stroke="#ddd"/>` +
    `<text x="${x(tick).toFixed(1)}" y="${height - 12}" text-anchor="middle">${tick}</text>`)
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${labelWidth + barWidth + 60}" height="${height}" font-family="sans-serif" font-size="12">
<text x="${labelWidth}" y="16" font-weight="bold">ratio to baseline (bar; black line: goal)</text>
${ticks.join('\n')}
${rows.join('\n')}
</svg>
`
}
