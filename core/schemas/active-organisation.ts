import { Type } from '@sinclair/typebox'

/** `:orgId` in the organisation routes: a positive integer, as user ids are. */
export const OrgIdParams = Type.Object({
  orgId: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description: 'The organisation\'s id' })
}, { additionalProperties: false })
