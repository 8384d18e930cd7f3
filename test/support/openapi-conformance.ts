/**
 * The served OpenAPI document against the real answers: every response the
 * end-to-end tests see through the harness (test/support/service.ts, callApi) is
 * checked against the document of the service that sent it. An answer whose status
 * the operation does not document, whose JSON body does not validate against the
 * documented schema, or whose error code the operation does not list, fails the
 * test that made the request. So the document and the code cannot drift apart
 * without the suite saying where.
 *
 * JSON Schema 2020-12 (OpenAPI 3.1's dialect), with Ajv and its formats.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020'
import addFormats from 'ajv-formats'

interface Operation {
  method: string
  template: string
  pattern: RegExp
  params: number
  responses: Record<string, { content?: Record<string, { schema?: unknown }> }>
}

export interface Checker {
  /** What is wrong with one answer ([] when it conforms, or when no operation of the document matches it). */
  check(r: { method: string; url: string; status: number; contentType: string | null; text: string }): string[]
}

const pointer = (s: string) => s.replace(/~/g, '~0').replace(/\//g, '~1')

function buildChecker(doc: { paths: Record<string, Record<string, Operation['responses'] | unknown>> }): Checker {
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true })
  addFormats(ajv)
  ajv.addSchema(doc as object, 'openapi')
  const operations: Operation[] = []
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      const responses = (op as { responses?: Operation['responses'] }).responses
      if (!responses) continue
      const params = (template.match(/\{[^}]+\}/g) ?? []).length
      const pattern = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}/g, '[^/]+')}$`)
      operations.push({ method: method.toUpperCase(), template, pattern, params, responses })
    }
  }
  // A literal segment wins over a parameter: /v1/me before /v1/{anything}.
  operations.sort((a, b) => a.params - b.params)
  const validators = new Map<string, ValidateFunction>()
  const validator = (op: Operation, status: string) => {
    const key = `${op.method} ${op.template} ${status}`
    let v = validators.get(key)
    if (!v) {
      const ref = `openapi#/paths/${pointer(op.template)}/${op.method.toLowerCase()}/responses/${status}/content/${pointer('application/json')}/schema`
      v = ajv.compile({ $ref: ref })
      validators.set(key, v)
    }
    return v
  }

  return {
    check({ method, url, status, contentType, text }) {
      if (method === 'HEAD') return []
      const path = new URL(url).pathname
      const op = operations.find((o) => o.method === method && o.pattern.test(path))
      if (!op) return []
      const where = `${method} ${path} (${op.template}) → ${status}`
      const documented = op.responses[String(status)]
      if (!documented) return [`${where}: the operation documents no ${status} response (it documents ${Object.keys(op.responses).join(', ')})`]
      const jsonSchema = documented.content?.['application/json']?.schema
      const isJson = (contentType ?? '').toLowerCase().startsWith('application/json')
      if (!jsonSchema) return text.length === 0 || !isJson ? [] : [`${where}: a JSON body where the document has none`]
      if (!isJson) return [`${where}: content-type ${contentType ?? 'none'} where the document has application/json`]
      let body: unknown
      try {
        body = JSON.parse(text)
      } catch {
        return [`${where}: the body is not JSON`]
      }
      const validate = validator(op, String(status))
      if (validate(body)) return []
      const errors = (validate.errors ?? [])
        .slice(0, 5)
        .map((e) => `${e.instancePath || '(body)'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`)
      return [`${where}: the body does not match the documented schema: ${errors.join('; ')}; body: ${text.slice(0, 300)}`]
    },
  }
}

const checkers = new Map<string, Promise<Checker | undefined>>()

/** The checker of the service at baseUrl (its own served document), once per service; undefined when it serves none. */
export function conformanceOf(baseUrl: string): Promise<Checker | undefined> {
  let c = checkers.get(baseUrl)
  if (!c) {
    c = fetch(`${baseUrl}/v1/openapi.json`)
      .then(async (r) => (r.ok ? buildChecker((await r.json()) as Parameters<typeof buildChecker>[0]) : undefined))
      .catch(() => undefined)
    checkers.set(baseUrl, c)
    // A service that did not answer is asked again next time.
    void c.then((checker) => checker ?? forgetConformance(baseUrl))
  }
  return c
}

/** Forget a service's document (its process is gone; another may take the port). */
export const forgetConformance = (baseUrl: string) => void checkers.delete(baseUrl)
