/**
 * The requests answered and their latency, per route, method and status, kept as plain numbers and
 * read out by prom-client's registry at a scrape (issue 23). A prom-client child's `inc` or
 * `observe` validates and hashes its labels on every call: about 4 % of an authenticated GET. Here
 * a request adds to its series' numbers; the registry formats them, in prom-client's own shape,
 * only when asked.
 */

/** One series: a route's answers of one method and status. */
export interface RequestSeries {
  /** Counts this answer and its duration. */
  record (seconds: number): void
}

interface SeriesNumbers {
  labels: { method: string, route: string, status_code: string }
  count: number
  sum: number
  /** Answers per bucket, not cumulative: bucketCounts[i] counts durations in (buckets[i-1], buckets[i]]; the last, above every bound. */
  bucketCounts: number[]
}

/** What prom-client's Registry reads of a metric (its `get()`), as its own Counter and Histogram give it. */
interface MetricValues {
  name: string
  help: string
  type: 'counter' | 'histogram'
  aggregator: 'sum'
  values: Array<{ value: number, labels: Record<string, string | number>, metricName?: string }>
}

export interface RequestMetricsOptions {
  /** The counter's name and help. */
  requests: { name: string, help: string }
  /** The histogram's name, help and upper bounds in seconds, ascending. */
  duration: { name: string, help: string, buckets: number[] }
}

export class RequestMetrics {
  private readonly all: SeriesNumbers[] = []

  private readonly options: RequestMetricsOptions

  constructor (options: RequestMetricsOptions) {
    this.options = options
  }

  /** The series of a route, method and status: made once (the caller keeps it), recorded into per request. */
  series (method: string, route: string, statusCode: number): RequestSeries {
    const { buckets } = this.options.duration
    const numbers: SeriesNumbers = { labels: { method, route, status_code: String(statusCode) }, count: 0, sum: 0, bucketCounts: new Array<number>(buckets.length + 1).fill(0) }
    this.all.push(numbers)
    return {
      record (seconds) {
        numbers.count += 1
        numbers.sum += seconds
        let bucket = 0
        while (bucket < buckets.length && seconds > buckets[bucket]) bucket++
        numbers.bucketCounts[bucket] += 1
      }
    }
  }

  /** The request counter, for Registry.registerMetric. */
  get requests (): { name: string, get (): Promise<MetricValues> } {
    const { name, help } = this.options.requests
    return {
      name,
      get: async () => ({ name, help, type: 'counter', aggregator: 'sum', values: this.all.map(({ labels, count }) => ({ value: count, labels })) })
    }
  }

  /** The latency histogram, for Registry.registerMetric: cumulative buckets, +Inf, sum and count, as prom-client's Histogram. */
  get duration (): { name: string, get (): Promise<MetricValues> } {
    const { name, help, buckets } = this.options.duration
    return {
      name,
      get: async () => ({
        name,
        help,
        type: 'histogram',
        aggregator: 'sum',
        values: this.all.flatMap(({ labels, count, sum, bucketCounts }) => {
          let cumulative = 0
          const bounds: Array<number | string> = [...buckets, '+Inf']
          return [
            ...bounds.map((le, index) => {
              cumulative += bucketCounts[index]
              return { value: cumulative, labels: { le, ...labels }, metricName: `${name}_bucket` }
            }),
            { value: sum, labels, metricName: `${name}_sum` },
            { value: count, labels, metricName: `${name}_count` }
          ]
        })
      })
    }
  }
}
