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
    }
  }

  get(method: string, path: string | undefined): RouteInfo | undefined {
    // Elysia answers HEAD with the GET handler: it must pass the same checks.
    return path === undefined ? undefined : this.routes.get(`${method === 'HEAD' ? 'GET' : method} ${path}`)
  }
}
