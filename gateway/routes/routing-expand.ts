/** `expand[]=extensions` on routing objects: the extensions that route to each. */
import type { Db } from '../../src/db/client'
import { extensionsTargeting, extensionView } from '../../src/services/routing/extensions'

export async function expandExtensions(db: Db, accountId: string, query: { 'expand[]'?: string[] }, rows: { id: string }[]) {
  if (!query['expand[]']?.includes('extensions')) return (_id: string) => ({})
  const byTarget = await extensionsTargeting(
    db,
    accountId,
    rows.map((r) => r.id),
  )
  return (id: string) => ({ extensions: { object: 'list' as const, data: (byTarget.get(id) ?? []).map(extensionView) } })
}
