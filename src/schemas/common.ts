/**
 * Building blocks for request and response schemas (TypeBox: JSON Schema that
 * both validates requests and produces the OpenAPI document).
 */
import { Type as T, type TSchema } from '@sinclair/typebox'
import { MAX_ID_LENGTH } from '../ids'

export { T }

export const Id = (description?: string) => T.String({ minLength: 1, maxLength: MAX_ID_LENGTH, ...(description ? { description } : {}) })
export const Nullable = <S extends TSchema>(s: S) => T.Union([s, T.Null()])
export const DateTime = () => T.String({ format: 'date-time' })
export const DateOnly = () => T.String({ format: 'date', pattern: '^\\d{4}-\\d{2}-\\d{2}$' })
/** An E.164 phone number: + and up to 15 digits, no leading zero. The one statement of the format. */
export const E164_PATTERN = '^\\+[1-9]\\d{1,14}$'
const e164 = new RegExp(E164_PATTERN)
export const isE164 = (s: string): boolean => e164.test(s)
export const E164 = () => T.String({ pattern: E164_PATTERN, maxLength: 16, description: 'E.164 phone number' })
/** A query bound on a time: a date (YYYY-MM-DD, the whole UTC day) or an ISO 8601 date-time. */
export const DateBound = (what: string) =>
  T.Optional(
    T.String({
      maxLength: 40,
      pattern: '^\\d{4}-\\d{2}-\\d{2}([T ].*)?$',
      description: `${what}: a date (YYYY-MM-DD, whole UTC day) or an ISO 8601 date-time`,
    }),
  )
export const Email = () => T.String({ format: 'email', maxLength: 254 })
export const Text = (maxLength = 255, minLength = 0) => T.String({ minLength, maxLength })

/** A body with no unknown fields: a misspelt field is an error, not silently ignored. */
export const Body = <P extends Record<string, TSchema>>(props: P, description?: string) =>
  T.Object(props, { additionalProperties: false, ...(description ? { description } : {}) })

export const ErrorBody = T.Object(
  {
    error: T.String({ description: 'Human-readable; may change without notice. Branch on code.' }),
    code: T.Optional(T.String({ description: 'Stable error code' })),
    details: T.Optional(T.Record(T.String(), T.Unknown(), { description: 'Field-level context; for validation_error, field path to reason' })),
  },
  { $id: '#/components/schemas/Error', title: 'Error' },
)

export const ListOf = <S extends TSchema>(item: S) =>
  T.Object({
    object: T.Literal('list'),
    url: T.String(),
    next_page_url: Nullable(T.String()),
    previous_page_url: Nullable(T.String()),
    data: T.Array(item),
  })

/** An expanded relation: `{object: 'list', data}`. */
export const Expanded = <S extends TSchema>(item: S) => T.Object({ object: T.Literal('list'), data: T.Array(item) })

export const Deleted = (object: string) => T.Object({ id: T.String(), object: T.Literal(object), deleted: T.Literal(true) })
