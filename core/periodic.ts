/**
 * The one way the service runs work in the background: a task every `intervalMs`, on an unref'd timer
 * (a timer never keeps the process alive), never two runs of it at once (a run still going when the
 * next tick comes makes that tick a no-op), a failure handed to `onError` and the next tick tried as
 * usual. `stop()` clears the timer and waits for the run under way, so a shutdown does not close the
 * store under it. Plugins call `stop()` from their onClose hook.
 */
export interface PeriodicTask {
  /** Runs the task now unless a run is under way; resolves when that run (or the one under way) ends. */
  runNow (): Promise<void>
  /** No more runs; resolves when the run under way, if any, has ended. */
  stop (): Promise<void>
}

export interface PeriodicOptions {
  /** What to do with a run's failure (log it, usually); the task runs again at the next tick. */
  onError: (error: unknown) => void
}

export function runPeriodically (intervalMs: number, task: () => Promise<void>, { onError }: PeriodicOptions): PeriodicTask {
  let running: Promise<void> | undefined
  let stopped = false
  const runNow = (): Promise<void> => {
    if (stopped) return Promise.resolve()
    running ??= task()
      .catch(onError)
      .finally(() => { running = undefined })
    return running
  }
  const timer = setInterval(() => { runNow().catch(onError) }, intervalMs)
  timer.unref()
  return {
    runNow,
    async stop () {
      stopped = true
      clearInterval(timer)
      await running
    }
  }
}
