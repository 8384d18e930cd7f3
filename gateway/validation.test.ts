/**
 * Unit tests of the validation helpers: `explain` turns a failed schema check into
 * field paths (`address.city`, `emails[1]`) with reasons; `nulFields` finds text the
 * database cannot store; `jsonNestsDeeperThan` bounds JSON nesting before parsing.
 */
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { Value } from '@sinclair/typebox/value'
import { t } from 'elysia'
import { AccountConfigInput, AddressInput } from '../src/schemas/accounts'
import { CreateUserRequest } from '../src/schemas/accounts'
import { Body, Id } from '../src/schemas/common'
import { listQuery } from './plugins/lists'
import { explain, jsonNestsDeeperThan, nulFields } from './validation'

describe('explain: field paths and reasons', () => {
  test('wrong types, missing and unknown fields at the top level', () => {
    expect(explain(CreateUserRequest, { email: 5, nick: 'x' })).toEqual({ email: 'must be a string, not number', nick: 'is not a known field' })
    expect(explain(CreateUserRequest, {})).toEqual({ email: 'is required' })
  })

  test('nested objects use dotted paths', () => {
    const schema = Body({ address: AddressInput })
    const d = explain(schema, { address: { city: 1, state: 'Illinois', postal_code: '1', zone: 'x' } })
    expect(d['address.city']).toBe('must be a string, not number')
    expect(d['address.state']).toContain('invalid format')
    expect(d['address.zone']).toBe('is not a known field')
    expect(Object.keys(d).sort()).toEqual(['address.city', 'address.state', 'address.zone'])
  })

  test('array items use [index] and name only the bad ones', () => {
    const d = explain(Body({ config: AccountConfigInput }), { config: { e911_notification: { emails: ['a@example.com', 'nope', 'b@example.com', 7] } } })
    expect(Object.keys(d).sort()).toEqual(['config.e911_notification.emails[1]', 'config.e911_notification.emails[3]'])
  })

  test('too many items is said once, on the array', () => {
    const d = explain(AccountConfigInput, { e911_notification: { emails: Array(21).fill('a@example.com') } })
    expect(d).toEqual({ 'e911_notification.emails': 'must have at most 20 items' })
  })

  test('enums list their values; nullable fields say so', () => {
    const schema = Body({
      status: t.Optional(t.Union([t.Literal('active'), t.Literal('inactive')])),
      name: t.Optional(t.Union([t.String({ maxLength: 3 }), t.Null()])),
    })
    const d = explain(schema, { status: 'paused', name: 'long name' })
    expect(d.status).toBe('must be one of "active", "inactive"')
    expect(d.name).toBe('must be at most 3 characters (or null)')
  })

  test('strings: empty, too long, format', () => {
    const schema = Body({ id: Id(), email: t.String({ format: 'email' }) })
    expect(explain(schema, { id: '', email: 'x' })).toEqual({ id: 'must not be empty', email: 'must be a valid email' })
    expect(explain(schema, { id: 'i'.repeat(256), email: 'a@b.co' })).toEqual({ id: 'must be at most 255 characters' })
  })

  test('integers: ranges and non-integers', () => {
    const schema = Body({ rate: t.Integer({ minimum: 0, maximum: 10 }), floor: t.Integer({ minimum: 5 }), ceiling: t.Integer({ maximum: 5 }) })
    expect(explain(schema, { rate: 11, floor: 4, ceiling: 6 })).toEqual({
      rate: 'must be an integer from 0 to 10',
      floor: 'must be at least 5',
      ceiling: 'must be at most 5',
    })
    expect(explain(schema, { rate: 1.5, floor: 5, ceiling: 5 })).toEqual({ rate: 'must be an integer' })
  })

  test('a body that is not an object is explained on `body`', () => {
    for (const v of [null, [], 'x', 5, true, undefined]) expect(Object.keys(explain(CreateUserRequest, v))).toEqual(['body'])
  })

  test('own keys only: `__proto__`, `constructor` and `toString` are unknown fields, not inherited ones', () => {
    const value = JSON.parse('{"__proto__": 1, "constructor": 2, "toString": 3, "email": "a@b.co"}')
    const d = explain(CreateUserRequest, value)
    expect(Object.hasOwn(d, '__proto__')).toBe(true)
    expect(Object.keys(d).sort()).toEqual(['__proto__', 'constructor', 'toString'])
    expect(d.constructor as unknown).toBe('is not a known field')
    expect(d.toString as unknown).toBe('is not a known field')
  })

  test('query values arrive as text: numbers are read as numbers and range-checked by name', () => {
    const schema = t.Object(listQuery, { additionalProperties: false })
    expect(explain(schema, { limit: '0' }, { query: true })).toEqual({ limit: 'must be an integer from 1 to 100' })
    expect(explain(schema, { limit: '101' }, { query: true })).toEqual({ limit: 'must be an integer from 1 to 100' })
    expect(explain(schema, { limit: 'abc' }, { query: true })).toEqual({ limit: 'must be an integer' })
    expect(explain(schema, { limit: '50' }, { query: true })).toEqual({})
    expect(explain(schema, { limit: '5', colour: 'red' }, { query: true })).toEqual({ colour: 'is not a known field' })
  })

  test('query arrays accept a single value and explain each bad item', () => {
    const schema = t.Object({ 'expand[]': t.Optional(t.Array(t.Union([t.Literal('extensions')]), { maxItems: 2 })) })
    expect(explain(schema, { 'expand[]': 'extensions' }, { query: true })).toEqual({})
    expect(explain(schema, { 'expand[]': 'bogus' }, { query: true })).toEqual({ 'expand[][0]': 'must be "extensions"' })
    expect(explain(schema, { 'expand[]': ['extensions', 'x', 'y'] }, { query: true })).toEqual({ 'expand[]': 'must have at most 2 items' })
  })

  test('property: a value that fails the schema always gets at least one reason; one that passes gets none', () => {
    fc.assert(
      fc.property(
        fc.jsonValue({ maxDepth: 3 }),
        fc.record(
          { email: fc.oneof(fc.constant('a@b.co'), fc.jsonValue({ maxDepth: 1 })), name: fc.option(fc.jsonValue({ maxDepth: 1 }), { nil: undefined }) },
          { requiredKeys: [] },
        ),
        (any, shaped) => {
          for (const v of [any, shaped]) {
            const d = explain(CreateUserRequest, v)
            if (Value.Check(CreateUserRequest, v)) expect(d).toEqual({})
            else expect(Object.keys(d).length).toBeGreaterThan(0)
            for (const reason of Object.values(d)) expect(typeof reason).toBe('string')
          }
        },
      ),
      { numRuns: 300 },
    )
  })
})

describe('nulFields: text PostgreSQL cannot store', () => {
  test('finds NUL in values and keys, at any path', () => {
    expect(nulFields({ a: 'x\u0000', b: ['ok', 'n\u0000'], c: { d: '\u0000' }, 'k\u0000': 1 })).toEqual({
      a: 'must not contain NUL characters',
      'b[1]': 'must not contain NUL characters',
      'c.d': 'must not contain NUL characters',
      'k\u0000': 'must not contain NUL characters',
    })
    expect(nulFields('\u0000')).toEqual({ body: 'must not contain NUL characters' })
  })

  test('clean input, numbers, null, binary data and undefined have nothing to report', () => {
    for (const v of [undefined, null, 5, 'text', { a: ['b', { c: 'd' }] }, new Uint8Array([0, 0]), new ArrayBuffer(4), new Blob(['\u0000'])])
      expect(nulFields(v)).toEqual({})
  })

  test('deep nesting is cut off rather than walked (validation refuses it anyway), and never overflows', () => {
    let deep: unknown = '\u0000'
    for (let i = 0; i < 100_000; i++) deep = [deep]
    expect(nulFields(deep)).toEqual({})
    expect(nulFields([[['\u0000']]])).toEqual({ '[0][0][0]': 'must not contain NUL characters' })
  })
})

describe('jsonNestsDeeperThan', () => {
  test('counts object and array nesting, ignoring brackets inside strings', () => {
    expect(jsonNestsDeeperThan('{"a":[1,{"b":2}]}', 3)).toBe(false)
    expect(jsonNestsDeeperThan('{"a":[1,{"b":[2]}]}', 3)).toBe(true)
    expect(jsonNestsDeeperThan('{"a":"[[[[[[[[[[[[[["}', 1)).toBe(false)
    expect(jsonNestsDeeperThan('{"a":"\\"[[[[[[[[["}', 1)).toBe(false)
    expect(jsonNestsDeeperThan('"\\\\"', 0)).toBe(false)
    expect(jsonNestsDeeperThan('[[]]', 2)).toBe(false)
    expect(jsonNestsDeeperThan('[[[]]]', 2)).toBe(true)
  })

  test('property: agrees with the depth of the parsed value', () => {
    const depth = (v: unknown): number => (v !== null && typeof v === 'object' ? 1 + Math.max(0, ...Object.values(v as object).map(depth)) : 0)
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.integer({ min: 0, max: 7 }), (v, max) => {
        expect(jsonNestsDeeperThan(JSON.stringify(v), max)).toBe(depth(v) > max)
      }),
      { numRuns: 300 },
    )
  })
})
