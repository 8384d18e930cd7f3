/**
 * Turns a failed schema check into field-level reasons: `details` of a
 * validation_error maps each offending field path (`address.city`, `limit`,
 * `config.e911_notification.emails[0]`) to a short reason.
 */
import { Value } from '@sinclair/typebox/value'
import type { TSchema } from '@sinclair/typebox'
import type { FieldDetails } from '../src/errors'

type S = TSchema & Record<string, any>

const join = (prefix: string, key: string | number) => (typeof key === 'number' ? `${prefix}[${key}]` : prefix === '' ? key : `${prefix}.${key}`)

const typeName = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v)

/** Query strings arrive as text: read numbers and booleans the way the schema wants them. */
function coerce(schema: S, v: unknown): unknown {
  if (typeof v !== 'string') return v
  const type = schema.type
  if ((type === 'integer' || type === 'number') && /^-?\d+(\.\d+)?$/.test(v)) return Number(v)
  if (type === 'boolean' && (v === 'true' || v === 'false')) return v === 'true'
  if (type === 'array') return [v]
  return v
}

function reason(schema: S, v: unknown): string {
  if (schema.anyOf) {
    const branches = schema.anyOf as S[]
    const consts = branches.filter((b) => b.const !== undefined).map((b) => JSON.stringify(b.const))
    const nonNull = branches.filter((b) => b.type !== 'null')
    const nullable = nonNull.length < branches.length
    if (consts.length === nonNull.length && consts.length > 0) return `must be one of ${consts.join(', ')}${nullable ? ' or null' : ''}`
    if (nonNull.length === 1) return reason(nonNull[0]!, v) + (nullable ? ' (or null)' : '')
    const plain = nonNull.find((b) => b.type === typeName(v) || (b.type === 'integer' && typeof v === 'number'))
    return plain ? reason(plain, v) : 'has the wrong type'
  }
  if (schema.const !== undefined) return `must be ${JSON.stringify(schema.const)}`
  switch (schema.type) {
    case 'string':
      if (typeof v !== 'string') return `must be a string, not ${typeName(v)}`
      if (schema.minLength !== undefined && v.length < schema.minLength)
        return schema.minLength === 1 ? 'must not be empty' : `must be at least ${schema.minLength} characters`
      if (schema.maxLength !== undefined && v.length > schema.maxLength) return `must be at most ${schema.maxLength} characters`
      if (schema.format) return `must be a valid ${schema.format}`
      return schema.description ? `has an invalid format (${schema.description})` : 'has an invalid format'
    case 'integer':
    case 'number': {
      const kind = schema.type === 'integer' ? 'an integer' : 'a number'
      if (typeof v !== 'number' || (schema.type === 'integer' && !Number.isInteger(v))) return `must be ${kind}`
      if (schema.minimum !== undefined && schema.maximum !== undefined) return `must be ${kind} from ${schema.minimum} to ${schema.maximum}`
      if (schema.minimum !== undefined) return `must be at least ${schema.minimum}`
      return `must be at most ${schema.maximum}`
    }
    case 'boolean':
      return 'must be true or false'
    case 'null':
      return 'must be null'
    case 'array':
      if (!Array.isArray(v)) return 'must be an array'
      if (schema.maxItems !== undefined && v.length > schema.maxItems) return `must have at most ${schema.maxItems} items`
      return 'is invalid'
    case 'object':
      return typeName(v) === 'object' ? 'is invalid' : `must be an object, not ${typeName(v)}`
    default:
      return 'is invalid'
  }
}

/** Elysia's query integers are `anyOf [numeric string, integer]`: check them as the integer they mean. */
function numericBranch(schema: S): S {
  const branches = schema.anyOf as S[] | undefined
  const numeric = branches?.find((b) => b.type === 'integer' || b.type === 'number')
  const text = branches?.find((b) => b.type === 'string' && (b.format === 'integer' || b.format === 'numeric'))
  return numeric && text ? numeric : schema
}

function walk(schema: S, value: unknown, path: string, out: FieldDetails, query: boolean) {
  if (query) {
    schema = numericBranch(schema)
    value = coerce(schema, value)
  }
  // Elysia's query numbers accept any numeric text, so a query object that checks may
  // still hold an out-of-range number: look at its fields one by one.
  if (Value.Check(schema, value) && !(query && schema.type === 'object')) return
  // Nullable objects: explain the object's fields rather than "wrong type".
  if (schema.anyOf && value !== null && typeof value === 'object') {
    const obj = (schema.anyOf as S[]).find((b) => b.type === (Array.isArray(value) ? 'array' : 'object'))
    if (obj) return walk(obj, value, path, out, query)
  }
  if (schema.type === 'object' && schema.properties && typeName(value) === 'object') {
    const v = value as Record<string, unknown>
    const props = schema.properties as Record<string, S>
    const required = new Set<string>(schema.required ?? [])
    for (const key of Object.keys(v)) {
      if (!Object.hasOwn(props, key) && schema.additionalProperties === false) out[join(path, key)] = 'is not a known field'
    }
    for (const [key, prop] of Object.entries(props)) {
      if (v[key] === undefined) {
        if (required.has(key)) out[join(path, key)] = 'is required'
        continue
      }
      walk(prop, v[key], join(path, key), out, query)
    }
    if (schema.minProperties !== undefined && Object.keys(v).length < schema.minProperties) out[path || 'body'] = 'must not be empty'
    return
  }
  if (schema.type === 'array' && Array.isArray(value) && schema.items) {
    const items = value as unknown[]
    if (schema.maxItems !== undefined && items.length > schema.maxItems) {
      out[path] = `must have at most ${schema.maxItems} items`
      return
    }
    for (const [i, item] of items.entries()) walk(schema.items, item, join(path, i), out, query)
    if (Object.keys(out).length === 0) out[path] = reason(schema, value)
    return
  }
  out[path || 'body'] = reason(schema, value)
}

export function explain(schema: TSchema, value: unknown, opts: { query?: boolean } = {}): FieldDetails {
  // No prototype while collecting, so that a field named `__proto__` is reported like any other.
  const out: FieldDetails = Object.create(null)
  walk(schema as S, value, '', out, opts.query ?? false)
  return { ...out }
}

const NUL = '\u0000'

/**
 * Text fields (and keys) holding a NUL character, by path: PostgreSQL text cannot
 * store one, so such input is refused up front rather than failing in the database.
 * Nesting deeper than any request schema goes is not searched: validation refuses it.
 */
export function nulFields(value: unknown, root = '', maxDepth = 16): FieldDetails {
  const out: FieldDetails = {}
  const stack: [unknown, string, number][] = [[value, root, 0]]
  while (stack.length > 0) {
    const [v, path, depth] = stack.pop()!
    if (typeof v === 'string') {
      if (v.includes(NUL)) out[path || 'body'] = 'must not contain NUL characters'
    } else if (depth >= maxDepth) {
    } else if (Array.isArray(v)) {
      for (const [i, item] of v.entries()) stack.push([item, join(path, i), depth + 1])
    } else if (v !== null && typeof v === 'object' && !(v instanceof Blob) && !(v instanceof ArrayBuffer) && !ArrayBuffer.isView(v)) {
      // Files and buffers are not text.
      for (const [key, item] of Object.entries(v)) {
        if (key.includes(NUL)) out[join(path, key)] = 'must not contain NUL characters'
        stack.push([item, join(path, key), depth + 1])
      }
    }
  }
  return out
}

/** Whether JSON text nests objects and arrays deeper than `max` (a linear scan, before parsing). */
export function jsonNestsDeeperThan(text: string, max: number): boolean {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i)
    if (inString) {
      if (ch === 92)
        i++ // backslash: skip the escaped character
      else if (ch === 34) inString = false
    } else if (ch === 34) inString = true
    else if (ch === 123 || ch === 91) {
      if (++depth > max) return true
    } else if (ch === 125 || ch === 93) depth--
  }
  return false
}
