/**
 * What an account session may call, component by component (spec, Authentication
 * rules 4–5; the mapping itself is ours, in gateway/session-components.ts and in the
 * document as `x-session-components`). The matrix walks every GET operation an
 * account session can reach in the served document, with a session of each
 * component alone: an operation its component grants is never a 403, any other is
 * 403 missing_capability.
 */
import { describe, expect, test } from 'bun:test'
import { SESSION_GRANTS } from '../gateway/session-components'
import { SESSION_COMPONENTS } from '../src/schemas/platform'
import { startTestService } from './support/service'

const t = await startTestService()
const doc = (await t.call<any>('GET', '/v1/openapi.json')).body
const a = await t.account()

async function sessionWith(component: string) {
  const r = await t.call<any>('POST', '/v1/account_sessions', { key: a.key, body: { account: a.id, components: { [component]: { enabled: true } } } })
  if (r.status !== 200) throw new Error(`account session failed: ${r.status} ${JSON.stringify(r.body)}`)
  return r.body.client_secret as string
}

type Op = { path: string; operationId: string; components: string[] }
/** GET operations an account session may call with some component (the event stream aside: it never ends). */
const sessionGets: Op[] = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
  item.get?.['x-session-components'] && path !== '/v1/events'
    ? [{ path, operationId: item.get.operationId, components: item.get['x-session-components'] }]
    : [],
)
/** Every other GET that takes the Service-Account header: no component reaches it. */
const accountGets: Op[] = Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
  item.get && !item.get['x-session-components'] && (item.get.parameters ?? []).some((p: any) => p.name === 'Service-Account')
    ? [{ path, operationId: item.get.operationId, components: [] }]
    : [],
)
/** A path with every parameter naming nothing: allowed gives 404 (or 200 for lists), refused gives 403. */
const concrete = (path: string) => path.replace(/\{[^}]+\}/g, (m) => (m === '{account_id}' ? a.id : 'nothing_here'))

describe('the component → operation map', () => {
  test('names only operations that exist, and the document carries it on each of them', () => {
    const ids = new Set(Object.values(doc.paths as Record<string, Record<string, any>>).flatMap((item) => Object.values(item).map((o: any) => o.operationId)))
    for (const [component, ops] of Object.entries(SESSION_GRANTS)) {
      for (const id of ops) expect({ component, id, exists: ids.has(id) }).toEqual({ component, id, exists: true })
    }
    expect(doc['x-session-components']).toEqual(JSON.parse(JSON.stringify(SESSION_GRANTS)))
    for (const item of Object.values(doc.paths as Record<string, Record<string, any>>)) {
      for (const o of Object.values(item)) {
        const granted = SESSION_COMPONENTS.filter((c) => (SESSION_GRANTS[c] as readonly string[]).includes(o.operationId))
        for (const c of granted) expect({ op: o.operationId, has: (o['x-session-components'] ?? []).includes(c) }).toEqual({ op: o.operationId, has: true })
      }
    }
  })

  test('the spec’s capabilities: call_logs reads the call log, its recordings and transcripts; voicemails the voicemails', () => {
    const grants = (c: keyof typeof SESSION_GRANTS) => SESSION_GRANTS[c] as readonly string[]
    for (const id of ['listCallLogs', 'getCallLog', 'getCallRecording', 'getCallTranscript']) expect(grants('call_logs')).toContain(id)
    for (const id of ['listVoicemails', 'getVoicemail', 'getVoicemailTranscript']) expect(grants('voicemails')).toContain(id)
    // Acting on calls stays with the platform's key.
    for (const id of ['createCall', 'updateCall', 'createCallListener']) expect(SESSION_COMPONENTS.some((c) => grants(c).includes(id))).toBe(false)
  })
})

describe('every GET, with a session of each component alone', () => {
  for (const component of SESSION_COMPONENTS) {
    test(component, async () => {
      const token = await sessionWith(component)
      expect(sessionGets.length).toBeGreaterThan(10)
      for (const op of [...sessionGets, ...accountGets]) {
        const r = await t.call<any>('GET', concrete(op.path), { key: token })
        const allowed = op.components.includes(component)
        const seen = { op: op.operationId, status: r.status, code: r.body?.code }
        if (allowed) expect(seen.status === 403 ? seen : 'not 403').toBe('not 403')
        // No component at all: sessions are refused outright (forbidden); another component's: missing_capability.
        else expect(seen).toEqual({ op: op.operationId, status: 403, code: op.components.length ? 'missing_capability' : 'forbidden' })
      }
    })
  }

  test('GET /v1/calls and /v1/voicemails: 200 for their own component, 403 for the other', async () => {
    const calls = await sessionWith('call_logs')
    const vms = await sessionWith('voicemails')
    expect((await t.call('GET', '/v1/calls', { key: calls })).status).toBe(200)
    expect((await t.call('GET', '/v1/voicemails', { key: vms })).status).toBe(200)
    expect((await t.call('GET', '/v1/calls', { key: vms })).status).toBe(403)
    expect((await t.call('GET', '/v1/voicemails', { key: calls })).status).toBe(403)
  })
})
