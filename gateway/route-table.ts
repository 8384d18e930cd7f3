/**
 * What each route declared about itself (operationId, auth rule, schemas), read
 * once from the composed app so that the request-wide hooks can act on it.
 */
import type { AnyElysia } from 'elysia'
import type { TSchema } from '@sinclair/typebox'
import type { AuthRule } from './plugins/auth'

export interface RouteInfo {
  operationId: string
  auth?: AuthRule
  mutation: boolean
  schemas: { body?: TSchema; query?: TSchema; params?: TSchema; headers?: TSchema }
}

export class RouteTable {
  private routes = new Map<string, RouteInfo>()
  /** Each path pattern once, with the methods it answers: to say 405 rather than 404. */
  private patterns: { match: RegExp; methods: string[] }[] = []

  load(app: AnyElysia) {
    for (const r of app.routes) {
      const hooks = (r.hooks ?? {}) as Record<string, any>
      const detail = hooks.detail ?? {}
      this.routes.set(`${r.method} ${r.path}`, {
        operationId: detail.operationId ?? `${r.method} ${r.path}`,
        auth: detail['x-auth'],
        mutation: r.method === 'POST' || r.method === 'DELETE' || r.method === 'PUT',
        schemas: { body: hooks.body, query: hooks.query, params: hooks.params, headers: hooks.headers },
      })
      const source = `^${r.path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/:[^/]+/g, '[^/]+')}/?$`
      const known = this.patterns.find((p) => p.match.source === source)
      if (known) known.methods.includes(r.method) || known.methods.push(r.method)
      else this.patterns.push({ match: new RegExp(source), methods: [r.method] })
    }
  }

  /** The methods some route answers on this path (empty: no route has the path at all). */
  methodsFor(pathname: string): string[] {
    const methods = new Set<string>()
    for (const p of this.patterns) if (p.match.test(pathname)) for (const m of p.methods) methods.add(m)
    return [...methods].sort()
  }

  get(method: string, path: string | undefined): RouteInfo | undefined {
    // Elysia answers HEAD with the GET handler: it must pass the same checks.
    return path === undefined ? undefined : this.routes.get(`${method === 'HEAD' ? 'GET' : method} ${path}`)
  }
}
