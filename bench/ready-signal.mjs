// Preloaded into the service under benchmark (node --import): tells the harness, over the IPC
// channel, the port it listens on. The service logs its address only at `info`; the benchmark runs at `warn`.
import net from 'node:net'

const listen = net.Server.prototype.listen
net.Server.prototype.listen = function (...args) {
  this.once('listening', () => process.send?.({ port: this.address().port }))
  return listen.apply(this, args)
}
