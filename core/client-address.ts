import ipaddr from 'ipaddr.js'

/**
 * What every per-address limit counts: the client's address (request.ip, as
 * TRUST_PROXY lets Fastify read it), with an IPv6 client counted per /64. A
 * single host is routinely given a whole /64, so counting its addresses one by
 * one would let it pick a fresh address for every try. IPv4 (and IPv4-mapped
 * IPv6) is counted per address. Used by @fastify/rate-limit's keyGenerator and
 * by the per-address limits of routes/rate-limits.ts, so they all agree.
 */
export function clientAddressKey (request: { ip: string }): string {
  return addressKey(request.ip)
}

export function addressKey (address: string): string {
  // IPv4, the common case: no parsing, no allocation.
  if (!address.includes(':')) return address
  let parsed: ipaddr.IPv4 | ipaddr.IPv6
  try {
    parsed = ipaddr.parse(address)
  } catch {
    return address
  }
  if (parsed.kind() === 'ipv4') return parsed.toString()
  const ipv6 = parsed as ipaddr.IPv6
  if (ipv6.isIPv4MappedAddress()) return ipv6.toIPv4Address().toString()
  const [a, b, c, d] = ipv6.parts
  return `${a.toString(16)}:${b.toString(16)}:${c.toString(16)}:${d.toString(16)}::/64`
}
