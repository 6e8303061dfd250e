import fastJsonStringify from 'fast-json-stringify'

/** Fastify's serializerCompiler (its FastifySerializerCompiler), typed by what it is given. */
export type SerializerCompiler = (route: { schema: object }) => (data: unknown) => string

const compiled = new WeakMap<object, (data: unknown) => string>()

/**
 * Fastify's own response serializer (fast-json-stringify, as its default compiler calls it: no shared
 * schemas here), compiled once per schema object and process. The response schemas are module
 * constants, so the second variant mounted, or the app built again (every test builds one), reuses
 * what the first compiled: about a fifth of building the app.
 */
export function buildSerializerCompiler (): SerializerCompiler {
  return ({ schema }) => {
    const known = compiled.get(schema)
    if (known !== undefined) return known
    // Compiled at the first answer that needs it, not when the route is added: the start compiled
    // every route's answers, most of them never sent by a given process (issue 23).
    let serialize: ((data: unknown) => string) | undefined
    return (data) => {
      if (serialize === undefined) {
        serialize = compiled.get(schema) ?? fastJsonStringify(schema)
        compiled.set(schema, serialize)
      }
      return serialize(data)
    }
  }
}
