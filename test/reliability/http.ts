/** A small HTTP client for the tests that drive the real server process. */

export interface HttpResponse {
  status: number
  headers: Headers
  body: any
}

export async function call (baseUrl: string, method: string, path: string, options: { body?: unknown, headers?: Record<string, string> } = {}): Promise<HttpResponse> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: { ...(options.body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
    body: options.body === undefined ? undefined : JSON.stringify(options.body)
  })
  const text = await response.text()
  return { status: response.status, headers: response.headers, body: text === '' ? undefined : JSON.parse(text) }
}

/** The value of one Set-Cookie of a response, or undefined when it sets no such cookie. */
export function setCookieValue (headers: Headers, name: string): string | undefined {
  for (const line of headers.getSetCookie()) {
    const [pair] = line.split(';')
    const separator = pair.indexOf('=')
    if (pair.slice(0, separator).trim() === name) return pair.slice(separator + 1).trim()
  }
  return undefined
}
