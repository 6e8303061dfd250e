import { Type, type Static } from '@sinclair/typebox'

/** The one body of every error answer. */
export const ErrorResponse = Type.Object({
  statusCode: Type.Integer({ minimum: 400, maximum: 599 }),
  code: Type.String({ pattern: '^[A-Z][A-Z0-9_]*$', description: 'Stable, upper-case; clients branch on it' }),
  error: Type.String({ description: 'The HTTP reason phrase' }),
  message: Type.String({ description: 'For people; may change' })
}, { $id: 'ErrorResponse', title: 'Error' })

export type ErrorBody = Static<typeof ErrorResponse>

/** Response schemas for the given error statuses, to spread into a route's `response`. */
export function errorResponses (...statusCodes: number[]): Record<number, typeof ErrorResponse> {
  return Object.fromEntries(statusCodes.map(statusCode => [statusCode, ErrorResponse]))
}
