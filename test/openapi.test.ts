/**
 * The OpenAPI 3.1 document of /v1 (GET /v1/openapi.json): it describes every /v1
 * route the app serves, every operation documents its id, credentials and errors,
 * and the maintained linter (@redocly/cli, recommended rules, redocly.yaml) finds
 * no problem in it.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { conformanceOf } from './support/openapi-conformance'
import { startTestService } from './support/service'
import { STABLE_CODES, type StableCode } from '../src/errors'

const ROOT = join(import.meta.dir, '..')
/** Served with a public-looking BASE_URL: the document's server is BASE_URL. */
const BASE_URL = 'https://voice-api.test'
const t = await startTestService({ BASE_URL })

const dir = mkdtempSync(join(tmpdir(), 'voice-openapi-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const
const res = await fetch(`${t.baseUrl}/v1/openapi.json`)
const doc: any = await res.json()

/** [method, path, operation] for every documented operation. */
const operations: [string, string, any][] = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => (METHODS as readonly string[]).includes(method))
    .map(([method, op]) => [method, path, op] as [string, string, any]),
)

/** The app's own /v1 routes, in OpenAPI path syntax; the document does not describe itself. */
const appRoutes = t.service.app.routes
  .filter((r) => r.path.startsWith('/v1/') && r.path !== '/v1/openapi.json')
  .map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`)

function resolve(ref: string): unknown {
  expect(ref.startsWith('#/')).toBe(true)
  return ref
    .slice(2)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<any>((node, key) => node?.[key], doc)
}

/** A schema with its named parts (`$ref`s to components) written out. */
const deref = (schema: unknown): any =>
  Array.isArray(schema)
    ? schema.map(deref)
    : schema && typeof schema === 'object'
      ? '$ref' in schema
        ? deref(resolve((schema as { $ref: string }).$ref))
        : Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, deref(v)]))
      : schema

describe('GET /v1/openapi.json', () => {
  test('is an OpenAPI 3.1.0 document of interface version 1.0.0, served as JSON, with BASE_URL as its server', () => {
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toContain('application/json')
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.info.version).toBe('1.0.0')
    expect(typeof doc.info.title).toBe('string')
    expect(doc.servers).toEqual([{ url: BASE_URL }])
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' })
  })

  test('needs no credentials', async () => {
    const r = await fetch(`${t.baseUrl}/v1/openapi.json`, { headers: { authorization: 'Bearer sk_test_not_a_real_key_000000' } })
    expect(r.status).toBe(200)
  })

  test('covers every /v1 route of the app, and nothing else', () => {
    expect(appRoutes.length).toBeGreaterThan(0)
    const documented = operations.map(([method, path]) => `${method} ${path}`)
    expect(documented.sort()).toEqual([...new Set(appRoutes)].sort())
    for (const path of Object.keys(doc.paths)) expect(path.startsWith('/v1/')).toBe(true)
  })

  test('every operation has a unique operationId, a summary and a declared tag', () => {
    const ids = operations.map(([, , op]) => op.operationId)
    for (const id of ids) expect(id).toMatch(/^[a-z][A-Za-z0-9]+$/)
    expect(new Set(ids).size).toBe(ids.length)
    const tags = new Set(doc.tags.map((tag: { name: string }) => tag.name))
    for (const [method, path, op] of operations) {
      expect({ at: `${method} ${path}`, summary: typeof op.summary }).toEqual({ at: `${method} ${path}`, summary: 'string' })
      expect(op.tags.length).toBeGreaterThan(0)
      for (const tag of op.tags) expect(tags.has(tag)).toBe(true)
    }
  })

  test('every operation states its credentials, and declares its path parameters and headers', () => {
    for (const [method, path, op] of operations) {
      expect(op.security).toEqual([{ bearerAuth: [] }])
      expect(op.description).toContain('Credentials:')
      // Each names who may call it: never an empty list.
      expect({ at: `${method} ${path}`, empty: op.description.includes('Credentials: .') }).toEqual({ at: `${method} ${path}`, empty: false })
      const params: any[] = op.parameters ?? []
      for (const [, name] of path.matchAll(/\{([^}]+)\}/g)) {
        const p = params.find((x) => x.in === 'path' && x.name === name)
        expect({ at: `${method} ${path}`, name, required: p?.required }).toEqual({ at: `${method} ${path}`, name, required: true })
        expect(p.schema.maxLength).toBeLessThanOrEqual(255)
      }
      if (method === 'post' || method === 'delete' || method === 'put') {
        expect(params.some((x) => x.in === 'header' && x.name === 'Idempotency-Key')).toBe(true)
      }
      for (const p of params)
        expect({ at: `${method} ${path} ${p.name}`, schema: typeof p.schema }).toEqual({ at: `${method} ${path} ${p.name}`, schema: 'object' })
    }
    // Account-scoped operations take the Service-Account header; platform-level ones do not.
    const header = (m: string, p: string) => (doc.paths[p][m].parameters ?? []).some((x: any) => x.in === 'header' && x.name === 'Service-Account')
    expect(header('get', '/v1/users')).toBe(true)
    expect(header('get', '/v1/accounts')).toBe(false)
  })

  test('every operation documents success and its errors: each error response is the Error body with the stable codes listed', () => {
    for (const [method, path, op] of operations) {
      const at = `${method} ${path}`
      const statuses = Object.keys(op.responses)
      expect({ at, success: statuses.some((s) => /^2\d\d$/.test(s)) }).toEqual({ at, success: true })
      for (const s of ['400', '401', '403', '429', '500']) expect({ at, has: statuses.includes(s) ? s : undefined }).toEqual({ at, has: s })
      for (const s of statuses.filter((s) => /^[45]\d\d$/.test(s))) {
        const r = op.responses[s]
        // the Error body, its code narrowed to the codes listed in the description (and only those)
        const listed = /Codes: ([a-z_, ]+)/.exec(r.description)?.[1]?.split(', ')
        expect({ at, s, codes: listed !== undefined }).toEqual({ at, s, codes: true })
        expect(r.content['application/json'].schema).toEqual({
          allOf: [{ $ref: '#/components/schemas/Error' }, { type: 'object', properties: { code: { type: 'string', enum: listed } } }],
        })
        for (const code of listed!)
          expect({ at, s, code, stable: STABLE_CODES[code as StableCode]?.status as number | undefined }).toEqual({ at, s, code, stable: Number(s) })
      }
      expect(op.responses['401'].description).toContain('unauthorized')
      expect(op.responses['429'].description).toContain('rate_limited')
      expect(op.responses['429'].headers['Retry-After']).toBeDefined()
      if (method === 'post' || method === 'delete') {
        expect(op.responses['409'].description).toContain('idempotency_key_in_use')
        expect(op.responses['422'].description).toContain('idempotency_key_reused')
      }
      if (/\{[^}]+\}/.test(path) && !path.startsWith('/v1/me')) expect({ at, has404: '404' in op.responses }).toEqual({ at, has404: true })
    }
    const error = doc.components.schemas.Error
    expect(error.required).toEqual(['error'])
    expect(Object.keys(error.properties).sort()).toEqual(['code', 'details', 'error'])
  })

  test('list operations answer the list envelope; limit is an integer 1 to 100, default 10', () => {
    const lists = operations.filter(([, , op]) => op.operationId.startsWith('list'))
    expect(lists.length).toBeGreaterThan(0)
    for (const [method, path, op] of lists) {
      const schema = op.responses['200'].content['application/json'].schema
      expect(schema.required).toEqual(['object', 'url', 'next_page_url', 'previous_page_url', 'data'])
      expect(schema.properties.data.type).toBe('array')
      // the items are the resource, not list envelopes again
      expect({ at: `${method} ${path}`, item: schema.properties.data.items.properties?.object?.const }).not.toEqual({ at: `${method} ${path}`, item: 'list' })
      const limit = op.parameters.find((p: any) => p.in === 'query' && p.name === 'limit')
      expect({ at: `${method} ${path}`, limit: limit?.schema }).toMatchObject({
        at: `${method} ${path}`,
        limit: { type: 'integer', minimum: 1, maximum: 100, default: 10 },
      })
      expect(limit.schema.anyOf).toBeUndefined()
    }
  })

  test('the harness holds every answer to the document: an undocumented status, a body off its schema, an unlisted code are caught', async () => {
    const checker = (await conformanceOf(t.baseUrl))!
    const url = `${t.baseUrl}/v1/users`
    const json = 'application/json'
    const envelope = { object: 'list', url: '/v1/users', next_page_url: null, previous_page_url: null }
    expect(checker.check({ method: 'GET', url, status: 200, contentType: json, text: JSON.stringify({ ...envelope, data: [] }) })).toEqual([])
    expect(checker.check({ method: 'GET', url, status: 200, contentType: json, text: JSON.stringify({ ...envelope, data: [{ id: 7 }] }) })[0]).toContain(
      'does not match the documented schema',
    )
    // the bug this replaced: a list of list envelopes
    expect(
      checker.check({ method: 'GET', url, status: 200, contentType: json, text: JSON.stringify({ ...envelope, data: [{ ...envelope, data: [] }] }) }),
    ).not.toEqual([])
    expect(checker.check({ method: 'GET', url, status: 418, contentType: json, text: '{}' })[0]).toContain('documents no 418 response')
    const conflict = (code: string) => checker.check({ method: 'POST', url, status: 409, contentType: json, text: JSON.stringify({ error: 'x', code }) })
    expect(conflict('user_email_taken')).toEqual([])
    expect(conflict('some_new_code')[0]).toContain('/code must be equal to one of the allowed values')
    expect(checker.check({ method: 'GET', url: `${t.baseUrl}/v1/no-such-route`, status: 404, contentType: json, text: '{}' })).toEqual([])
  })

  test('request bodies are JSON and come from the schemas that validate requests', () => {
    // The upload operations (gateway/uploads.ts) are the one exception: multipart, or raw audio.
    const uploads = new Set(['uploadFile', 'createAudioClip', 'setVoicemailGreeting', 'uploadPortOrderBillCopy', 'uploadPortOrderCsr'])
    for (const [, , op] of operations) {
      if (!op.requestBody) continue
      if (uploads.has(op.operationId)) expect(Object.keys(op.requestBody.content)).toContain('multipart/form-data')
      else expect(Object.keys(op.requestBody.content)).toEqual(['application/json'])
    }
    const create = deref(doc.paths['/v1/accounts'].post.requestBody.content['application/json'].schema)
    expect(create.required).toEqual(expect.arrayContaining(['email', 'primary_contact_name', 'address', 'pricing']))
    // The very schema the route validates with (as JSON, without TypeBox's $id marks).
    const asJson = (schema: unknown) => JSON.parse(JSON.stringify(schema, (k, v) => (k === '$id' ? undefined : v)))
    let withBody = 0
    for (const r of t.service.app.routes) {
      const body = (r.hooks as { body?: unknown } | undefined)?.body
      if (!r.path.startsWith('/v1/') || !body || typeof body !== 'object') continue
      withBody++
      const path = r.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')
      const documented = deref(doc.paths[path][r.method.toLowerCase()].requestBody?.content['application/json'].schema)
      expect({ at: `${r.method} ${path}`, schema: documented }).toEqual({ at: `${r.method} ${path}`, schema: asJson(body) })
    }
    expect(withBody).toBeGreaterThan(0)
  })

  test('every $ref resolves', () => {
    const refs: string[] = []
    JSON.stringify(doc, (k, v) => {
      if (k === '$ref' && typeof v === 'string') refs.push(v)
      return v
    })
    expect(refs.length).toBeGreaterThan(0)
    for (const ref of new Set(refs)) expect({ ref, found: resolve(ref) !== undefined }).toEqual({ ref, found: true })
  })

  test('the maintained linter (@redocly/cli, recommended rules) reports no errors and no warnings', async () => {
    const file = join(dir, 'openapi.json')
    writeFileSync(file, JSON.stringify(doc, null, 2))
    const node = Bun.which('node')
    const cli = join(ROOT, 'node_modules/@redocly/cli/bin/cli.js')
    const proc = Bun.spawn([node ?? process.execPath, cli, 'lint', file, '--format=json', `--config=${join(ROOT, 'redocly.yaml')}`], {
      cwd: ROOT,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1', CI: 'true' },
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
    })
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    let report: { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string; location: { pointer: string }[] }[] }
    try {
      report = JSON.parse(out.slice(out.indexOf('{')))
    } catch {
      throw new Error(`redocly lint gave no JSON report (exit ${code}):\n${out}\n${err}`)
    }
    const problems = report.problems.map((p) => `${p.ruleId}: ${p.message} at ${p.location.map((l) => l.pointer).join(', ')}`)
    expect(problems).toEqual([])
    expect(report.totals.errors).toBe(0)
    expect(report.totals.warnings).toBe(0)
    expect(code).toBe(0)
  }, 30_000)
})
