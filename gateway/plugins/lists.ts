/**
 * The one list mechanism for every route: `limit` and `page` parameters, cursor
 * checking, and the `{object, url, next_page_url, previous_page_url, data}`
 * envelope with absolute URLs built from BASE_URL.
 */
import { t } from 'elysia'
import type { TLiteral } from '@sinclair/typebox'
import type { CursorCodec, Page, PageRequest } from '../../src/pagination'

export const DEFAULT_LIMIT = 10

export const listQuery = {
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 100, default: DEFAULT_LIMIT, description: 'page size, 1 to 100 (default 10)' })),
  page: t.Optional(t.String({ minLength: 1, maxLength: 2048, description: 'opaque cursor; use only through next_page_url and previous_page_url' })),
}

/** `expand[]` with the relations a route can inline. */
export const expandQuery = <E extends string>(...names: [E, ...E[]]) =>
  t.Optional(
    t.Array(t.Union(names.map((n) => t.Literal(n)) as unknown as [TLiteral<E>]), { maxItems: names.length * 2, description: 'related lists to inline' }),
  )

type Query = Record<string, unknown>

/** Filters that define the list (everything but limit and page), in a stable order. */
function filterPairs(query: Query): [string, string][] {
  const pairs: [string, string][] = []
  for (const key of Object.keys(query).sort()) {
    if (key === 'limit' || key === 'page') continue
    const v = query[key]
    if (v === undefined) continue
    for (const item of Array.isArray(v) ? v : [v]) pairs.push([key, String(item)])
  }
  return pairs
}

export interface ListContext {
  cursors: CursorCodec
  baseUrl: string
  /** Whose list this is: a cursor from another account's list is refused. */
  owner: string
  path: string
  query: Query
}

const scopeOf = (c: ListContext) => `${c.owner}|${c.path}|${JSON.stringify(filterPairs(c.query))}`

export function pageRequest(c: ListContext): PageRequest {
  const limit = (c.query.limit as number | undefined) ?? DEFAULT_LIMIT
  const page = c.query.page as string | undefined
  return { limit, position: page === undefined ? undefined : c.cursors.decode(page, scopeOf(c)) }
}

export function listEnvelope<R, V>(c: ListContext, page: Page<R>, view: (row: R) => V) {
  const scope = scopeOf(c)
  const limit = (c.query.limit as number | undefined) ?? DEFAULT_LIMIT
  const link = (cursor: string) => {
    const params = new URLSearchParams(filterPairs(c.query))
    params.set('limit', String(limit))
    params.set('page', cursor)
    return `${c.baseUrl}${c.path}?${params.toString()}`
  }
  return {
    object: 'list' as const,
    url: c.path,
    next_page_url: page.next ? link(c.cursors.encode(page.next, scope)) : null,
    previous_page_url: page.previous ? link(c.cursors.encode(page.previous, scope)) : null,
    data: page.rows.map(view),
  }
}
