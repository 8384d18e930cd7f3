/**
 * Named component schemas for the OpenAPI document. Every TypeBox schema exported
 * by src/schemas/*.ts is a component named after its export (`ErrorBody` is
 * `Error`, a `…Schema` suffix is dropped), and any copy of it inside a body is
 * replaced by a `$ref`. The route modules stay as they are: they validate with the
 * very object the document names, so an identical copy is that schema.
 *
 * A body no export matches still gets a name, derived from what it is (a deletion
 * of `object` is `Deleted<Object>`) or from its operationId, so that no request or
 * response body of an operation is an anonymous inline object.
 */
import { Kind, type TSchema } from '@sinclair/typebox'
import * as accounts from '../../src/schemas/accounts'
import * as calls from '../../src/schemas/calls'
import * as common from '../../src/schemas/common'
import * as devices from '../../src/schemas/devices'
import * as e911 from '../../src/schemas/e911'
import * as events from '../../src/schemas/events'
import * as faxes from '../../src/schemas/faxes'
import * as hardware from '../../src/schemas/hardware'
import * as media from '../../src/schemas/media'
import * as numbers from '../../src/schemas/numbers'
import * as platform from '../../src/schemas/platform'
import * as porting from '../../src/schemas/porting'
import * as quality from '../../src/schemas/quality'
import * as routing from '../../src/schemas/routing'
import * as webrtc from '../../src/schemas/webrtc'

/** Every module of src/schemas, by file name (test/openapi-components.test.ts checks none is missing). */
export const SCHEMA_MODULES: Record<string, Record<string, unknown>> = {
  accounts,
  calls,
  common,
  devices,
  e911,
  events,
  faxes,
  hardware,
  media,
  numbers,
  platform,
  porting,
  quality,
  routing,
  webrtc,
}

export const COMPONENT_PREFIX = '#/components/schemas/'
export const ref = (name: string) => ({ $ref: `${COMPONENT_PREFIX}${name}` })

/** JSON Schema as served: TypeBox's symbol keys and `$id` marks dropped. */
export const plain = (schema: unknown) => JSON.parse(JSON.stringify(schema, (k, v) => (k === '$id' ? undefined : v)))

export const pascal = (s: string) =>
  s
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('')

const isTypeBox = (v: unknown): v is TSchema => typeof v === 'object' && v !== null && Kind in v

/** The component name of an export of src/schemas. */
export function componentName(exportName: string): string {
  if (exportName === 'ErrorBody') return 'Error'
  return exportName.endsWith('Schema') && exportName !== 'Schema' ? exportName.slice(0, -'Schema'.length) : exportName
}

/**
 * `details` as it is sent: each key a field path or a named context, each value
 * a reason, or a list of ids or values (`supported`, `referenced_by`,
 * `already_on_account`, `in_service_elsewhere`). TypeBox's `Record(String,
 * Unknown)` would serve `patternProperties` with an empty schema, which tells a
 * client nothing and which API reference renderers reject.
 */
const ERROR_DETAILS = {
  type: 'object',
  description:
    'Field-level context. For validation_error (and the other field-checking codes), each key is a field path (`address.postal_code`, `users.0`) and its value the reason. Lists: details.supported (unsupported_event_type), details.referenced_by (routing_object_in_use), details.already_on_account and details.in_service_elsewhere (phone_numbers_already_claimed).',
  additionalProperties: {
    anyOf: [
      { type: 'string', description: 'why the field is wrong' },
      { type: 'array', items: { type: 'string' }, description: 'the values or ids the code is about' },
    ],
  },
}

export function errorSchema() {
  const error = plain(common.ErrorBody)
  return { ...error, properties: { ...error.properties, details: ERROR_DETAILS } }
}

/** The named schemas of src/schemas, and a lookup from a schema's JSON text to its name. */
export class ComponentRegistry {
  readonly schemas = new Map<string, unknown>()
  private readonly byJson = new Map<string, string>()

  constructor() {
    const exports = Object.keys(SCHEMA_MODULES)
      .sort()
      .flatMap((module) =>
        Object.entries(SCHEMA_MODULES[module]!)
          .filter(([, v]) => isTypeBox(v))
          .map(([name, v]) => [name, v] as const)
          .sort(([a], [b]) => a.localeCompare(b)),
      )
    for (const [exportName, schema] of exports) {
      const name = componentName(exportName)
      this.add(name, name === 'Error' ? errorSchema() : plain(schema))
      // The document serves its own Error; a body with TypeBox's form of it is still the Error.
      if (name === 'Error') this.byJson.set(JSON.stringify(plain(schema)), name)
    }
  }

  /** Registers `schema` under `name`; an identical schema keeps the name it already has. */
  add(name: string, schema: unknown): string {
    const json = JSON.stringify(schema)
    const known = this.byJson.get(json)
    if (known) return known
    if (this.schemas.has(name)) throw new Error(`OpenAPI component ${name} is defined twice with different schemas`)
    this.schemas.set(name, schema)
    this.byJson.set(json, name)
    return name
  }

  nameOf(schema: unknown): string | undefined {
    return this.byJson.get(JSON.stringify(schema))
  }

  /** `schema` with every part that is a named schema (itself too, unless `keepRoot`) replaced by its `$ref`. */
  refer(schema: unknown, keepRoot = false): unknown {
    if (Array.isArray(schema)) return schema.map((s) => this.refer(s))
    if (!isSchemaObject(schema)) return schema
    if (!keepRoot && isObjectLike(schema)) {
      const name = this.nameOf(schema)
      if (name) return ref(name)
    }
    return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, k === 'const' || k === 'default' || k === 'examples' ? v : this.refer(v)]))
  }

  /**
   * A body's schema as a `$ref`: its own name when src/schemas exports it, else
   * `fallback` (registered on first use). Non-object bodies (raw audio) stay inline.
   */
  body(schema: unknown, fallback: () => string): unknown {
    if (!isSchemaObject(schema) || schema.$ref) return schema
    const known = this.nameOf(schema)
    if (known) return ref(known)
    if (schema.type !== 'object' && !schema.anyOf && !schema.oneOf && !schema.allOf) return schema
    return ref(this.add(fallback(), schema))
  }

  /** The components the document uses (from `roots`, following refs between components), each with its nested named parts as refs. */
  used(roots: unknown): Record<string, unknown> {
    const out: Record<string, unknown> = {}
    const pending = [...refsIn(roots)]
    while (pending.length > 0) {
      const name = pending.pop()!
      if (name in out) continue
      const schema = this.schemas.get(name)
      if (schema === undefined) continue
      out[name] = openRecords(this.refer(schema, true))
      pending.push(...refsIn(out[name]))
    }
    return Object.fromEntries(
      Object.keys(out)
        .sort()
        .map((name) => [name, out[name]]),
    )
  }
}

/**
 * Only objects (and unions of them) become refs inside other schemas: a union of
 * literals such as `inbound | outbound` is exported under one meaning (say
 * FaxDirection) and would lend that name to every field that merely has the
 * same values.
 */
function isObjectLike(schema: SchemaObject): boolean {
  if (schema.type === 'object') return true
  const members = schema.anyOf ?? schema.oneOf
  return Array.isArray(members) && members.some((m) => isSchemaObject(m) && m.type === 'object')
}

/** A JSON Schema node as this module reads it: an object whose keywords are unknown until looked at. */
type SchemaObject = { type?: unknown; anyOf?: unknown; oneOf?: unknown; allOf?: unknown; $ref?: unknown; [keyword: string]: unknown }
const isSchemaObject = (node: unknown): node is SchemaObject => typeof node === 'object' && node !== null && !Array.isArray(node)

/**
 * `Record(String, Unknown)` as served: an object of any fields
 * (`additionalProperties: true`) rather than `patternProperties` with an empty
 * schema, which says the same to a validator and nothing to a reader or renderer.
 */
function openRecords(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(openRecords)
  if (typeof schema !== 'object' || schema === null) return schema
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(schema)) {
    const open = k === 'patternProperties' && JSON.stringify(v) === '{"^(.*)$":{}}'
    if (open) out.additionalProperties = true
    else out[k] = k === 'const' || k === 'default' || k === 'examples' ? v : openRecords(v)
  }
  return out
}

/** The component names `node` refers to. */
export function refsIn(node: unknown): Set<string> {
  const found = new Set<string>()
  JSON.stringify(node, (k, v) => {
    if (k === '$ref' && typeof v === 'string' && v.startsWith(COMPONENT_PREFIX)) found.add(v.slice(COMPONENT_PREFIX.length))
    return v
  })
  return found
}
