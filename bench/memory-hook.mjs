// Preloaded into the service by bench/rss-probe.ts (node --import): answers an IPC 'memory' message with
// process.memoryUsage() and the size of each V8 heap space, so the probe can tell V8's heap from the rest.
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8'

process.on('message', (message) => {
  // { snapshot: path }: a heap snapshot written there (PROBE_SNAPSHOT), answered when done.
  if (typeof message === 'object' && message?.snapshot !== undefined) {
    process.send?.({ snapshot: writeHeapSnapshot(message.snapshot) })
    return
  }
  if (message !== 'memory') return
  const spaces = Object.fromEntries(getHeapSpaceStatistics().map((space) => [space.space_name, space.space_size]))
  process.send?.({ memory: { ...process.memoryUsage(), spaces } })
})
