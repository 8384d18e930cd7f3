/**
 * Faxes (spec, "Faxes, Files, Hardware Orders", "Fax", "Fax events", "Limits"). An
 * outbound fax is an actor (actors/faxes, machine machines/fax.ts): the route checks
 * the document (a PDF file of the account, its pages counted from it) and the
 * numbers, renders it for fax machines, checks the account's per-hour limit, and
 * writes the fax with its actor's spawn in one transaction. The sandbox carrier's
 * answers reach the actor on its durable timers; the fax's one final event is
 * fax.delivered or fax.failed. Inbound faxes come from the sandbox test helper.
 */
import { Elysia, t } from 'elysia'
import {
  admitFax,
  COMMAND_MESSAGE,
  FAX_KIND,
  type FaxActorInput,
  type FaxCommandMessage,
  faxSnapshotOf,
  readActorState,
  sendCommand,
  spawnInTx,
  type TimerRow,
} from '../../actors/client'
import { ApiError, ValidationError } from '../../src/errors'
import { newId } from '../../src/ids'
import { Id } from '../../src/schemas/common'
import * as S from '../../src/schemas/faxes'
import {
  accountNumber,
  assertFaxCarrier,
  checkFaxLimit,
  checkNumber,
  type FaxRow,
  faxDocument,
  faxView,
  filesOf,
  getFax,
  insertFax,
  isFinalFax,
  listFaxes,
  markFaxDeleted,
  newFaxId,
  receiveFax,
  renderFaxDocument,
  storeRendering,
} from '../../src/services/faxes/faxes'
import type { GatewayDeps } from '../context'
import { accountLevel, op } from '../docs'
import { expandQuery, listEnvelope, listQuery, pageRequest } from '../plugins/lists'
import type { requestContext } from '../plugins/request-context'
import { deleteThenRemoveBlob, signing } from './media-helpers'

const TAG = 'Faxes'
const rule = accountLevel()
const params = t.Object({ fax: Id('fax ID') })

const SANDBOX =
  'Sandbox carrier (sandbox keys; live keys get 502 fax_carrier_unavailable, no fax carrier being configured), simulated time (VOICE_CLOCK_SPEED applies) on durable timers that survive a restart: the fax is dialled 5 s after it is sent (status sending), then takes 10 s per page. The destination steers it: +15005550200 busy (fax.failed dial_busy, pages null); +15005550201 no answer (dial_no_answer after 45 s, pages null); +15005550202 answered but negotiation fails (fax_failed, pages 0, t38); +15005550203 the line drops during the last page (fax_failed, pages = pages of the document − 1, g711); +15005550204 busy on all 3 attempts 60 s apart (max_attempts_exceeded, pages null); +15005550205 delivered over G.711 (the far end has no T.38); +15005550206 rings for an hour, then dial_no_answer (pages null: time to delete one in flight); any other number is delivered over T.38. Each outbound fax produces exactly one of fax.delivered (pages: the pages delivered) or fax.failed (error_code; pages null if never transmitting, 0 if it failed before the first page, N if N pages were sent), never both, and no intermediate events.'
const RENDERING =
  'The document is rendered the way fax machines take it, TIFF with CCITT Group 3 pages at 204x196 dpi (rendering.url), by ghostscript; a host without ghostscript skips that step and says so in rendering.reason. Page counts come from the PDF itself (its page tree).'

const inputOf = (row: FaxRow, platformId: string): FaxActorInput => ({
  fax_id: row.id,
  from_number: row.fromNumber,
  to_number: row.toNumber,
  pages: row.pages,
  at: row.createdAt.toISOString(),
  runtime: { owner: { platformId, accountId: row.accountId, mode: row.mode } },
})

const sandboxOnly = () => new ApiError(400, 'Test helpers work in sandbox mode only; use a sk_test_ key.', 'sandbox_only')

export function faxRoutes(deps: GatewayDeps, base: ReturnType<typeof requestContext>) {
  const wake = (id: string, rows?: TimerRow[]) => (deps.actors ? deps.actors.wake(FAX_KIND, id, rows).catch(() => {}) : Promise.resolve())

  /** The document and the numbers of a send or a receive, all checked (every problem answered together, 400, nothing stored). */
  async function checked(accountId: string, body: { file: string; to_number?: string; from_number?: string }, direction: 'inbound' | 'outbound') {
    const problems: Record<string, string> = {}
    const remoteField = direction === 'outbound' ? 'to_number' : 'from_number'
    const localField = direction === 'outbound' ? 'from_number' : 'to_number'
    const remote = checkNumber(body[remoteField], remoteField, problems)
    const localGiven = checkNumber(body[localField], localField, problems, false)
    const local = problems[localField] ? undefined : await accountNumber(deps.db, accountId, localGiven, localField, problems)
    const doc = await faxDocument(deps.db, deps.storage, accountId, body.file, 'file', problems)
    if (Object.keys(problems).length > 0) throw new ValidationError(problems)
    return { remote: remote!, local: local!, doc: doc! }
  }

  return new Elysia({ name: 'routes/faxes' })
    .use(base)
    .get(
      '/v1/faxes',
      async ({ auth, query, listContext }) => {
        const ctx = listContext(query)
        const page = await listFaxes(
          deps.db,
          auth.account!.id,
          { direction: query.direction, status: query.status, did: query.did, number: query.number, is_read: query.is_read },
          pageRequest(ctx),
        )
        const expanded = query['expand[]']?.includes('file') ? await filesOf(deps.db, page.rows) : undefined
        const sign = signing(deps)
        return listEnvelope(ctx, page, (row) => faxView(row, sign, expanded))
      },
      {
        query: t.Object(
          {
            ...listQuery,
            direction: t.Optional(S.FaxDirection),
            status: t.Optional(S.FaxStatus),
            did: t.Optional(t.String({ description: 'the account’s number (E.164): the sender of outbound faxes, the receiver of inbound ones' })),
            number: t.Optional(t.String({ description: 'the other party (E.164): the destination of outbound faxes, the sender of inbound ones' })),
            is_read: t.Optional(t.Boolean({ description: 'inbound faxes arrive unread' })),
            'expand[]': expandQuery('file'),
          },
          { additionalProperties: false },
        ),
        detail: op('listFaxes', {
          summary: 'List faxes',
          description: `Newest first, inbound and outbound; deleted faxes are not listed. Filters: direction, status, did (the account’s number), number (the other party), is_read. expand[]=file inlines the document’s file.\n\n${RENDERING}`,
          tag: TAG,
          auth: rule,
          list: S.Fax,
        }),
      },
    )
    .post(
      '/v1/faxes',
      async ({ auth, body, mutate }) => {
        const account = auth.account!
        assertFaxCarrier(account.mode)
        const { remote, local, doc } = await checked(account.id, body, 'outbound')
        const rendered = await renderFaxDocument(doc.bytes)
        const id = newFaxId()
        const written: TimerRow[] = []
        const response = await mutate(async (tx) => {
          const now = deps.clock.now()
          await checkFaxLimit(tx, account.id, 'outbound', now)
          const rendering = await storeRendering(tx, deps.storage, account.id, id, rendered, now)
          const row = await insertFax(tx, {
            id,
            accountId: account.id,
            mode: account.mode,
            direction: 'outbound',
            did: local,
            fromNumber: local,
            toNumber: remote,
            fileId: doc.file.id,
            pages: doc.pages,
            rendering,
            at: now,
          })
          written.push(await spawnInTx(tx, deps.clock, FAX_KIND, row.id, inputOf(row, auth.principal.platformId)))
          return { resource: row.id, body: faxView(row, signing(deps)) }
        })
        if (written.length > 0) await wake(id, written)
        return response
      },
      {
        body: S.SendFaxRequest,
        detail: op('sendFax', {
          summary: 'Send a fax',
          description: `Sends the PDF uploaded with POST /v1/files (purpose fax_document) to to_number, from from_number (an active number of the account; default its first). Answers the fax, queued. 400 validation_error with details per field, nothing stored: file not a file of the account, not uploaded as fax_document, not a PDF (details.file not_pdf) or a PDF whose pages cannot be counted (unreadable_pdf); to_number or from_number not E.164, from_number not an active number of the account. 400 no_phone_number when the account has none. 429 fax_limit_exceeded with Retry-After when the account already sent fax_outbound_per_hour faxes (account config, default 25) in the last hour (deleted faxes count).\n\n${SANDBOX}\n\n${RENDERING}`,
          tag: TAG,
          auth: rule,
          response: S.Fax,
          errors: { 400: ['no_phone_number'], 429: ['fax_limit_exceeded'], 502: ['fax_carrier_unavailable'] },
        }),
      },
    )
    .delete(
      '/v1/faxes/:fax',
      async ({ auth, params, mutate }) => {
        const written: TimerRow[] = []
        const response = await deleteThenRemoveBlob(deps, (setKey) =>
          mutate(async (tx) => {
            const row = await getFax(tx, auth.account!.id, params.fax)
            const at = deps.clock.now()
            if (row.direction === 'outbound' && !isFinalFax(row.status)) {
              // In flight: the actor cancels it (fax.failed, error_code cancelled) unless the carrier's answer came first.
              const snapshot = faxSnapshotOf(await readActorState(tx, FAX_KIND, row.id), inputOf(row, auth.principal.platformId))
              const a = admitFax(snapshot, { type: 'cancel' }, at.toISOString())
              if ('event' in a) {
                const message: FaxCommandMessage = {
                  type: COMMAND_MESSAGE,
                  command_id: newId('command'),
                  at: at.toISOString(),
                  fax_id: row.id,
                  command: { type: 'cancel' },
                }
                written.push(await sendCommand(tx, deps.clock, FAX_KIND, row.id, message))
              }
            }
            setKey(await markFaxDeleted(tx, row.id, at))
            return { resource: row.id, body: { id: row.id, object: 'fax' as const, deleted: true as const } }
          }),
        )
        if (written.length > 0) await wake(params.fax, written)
        return response
      },
      {
        params,
        detail: op('deleteFax', {
          summary: 'Delete a fax',
          description:
            'Removes the fax from the account (it is no longer listed; its rendered TIFF is removed; the document’s file stays). A fax still in flight (queued or sending) is cancelled first: it ends failed with error_code cancelled and its one fax.failed event. Deleted faxes still count toward the per-hour limits.',
          tag: TAG,
          auth: rule,
          response: S.DeletedFax,
          errors: { 404: ['fax_not_found'] },
        }),
      },
    )
    .post(
      '/v1/test_helpers/faxes/inbound',
      async ({ auth, body, mutate }) => {
        const account = auth.account!
        if (account.mode !== 'test') throw sandboxOnly()
        const { remote, local, doc } = await checked(account.id, body, 'inbound')
        const rendered = await renderFaxDocument(doc.bytes)
        const id = newFaxId()
        return mutate(async (tx) => {
          const now = deps.clock.now()
          await checkFaxLimit(tx, account.id, 'inbound', now)
          const rendering = await storeRendering(tx, deps.storage, account.id, id, rendered, now)
          const row = await receiveFax(
            tx,
            deps.clock,
            { platformId: auth.principal.platformId, accountId: account.id, mode: account.mode },
            {
              id,
              accountId: account.id,
              mode: account.mode,
              direction: 'inbound',
              did: local,
              fromNumber: remote,
              toNumber: local,
              fileId: doc.file.id,
              pages: doc.pages,
              rendering,
              at: now,
              transport: body.transport,
            },
          )
          return { resource: row.id, body: faxView(row, signing(deps)) }
        })
      },
      {
        body: S.InboundFaxRequest,
        detail: {
          ...op('createTestInboundFax', {
            summary: 'Receive a fax (sandbox only; extension)',
            description: `Extension beyond the spec (x-extension). Delivers a fax to the account as if from_number had sent it to to_number (an active number of the account; default its first): the document is the PDF uploaded with POST /v1/files (purpose fax_document), its pages counted from it. The fax is stored received and unread, and fax.received is sent at once with fax_id, from_number, to_number, pages and transport (default t38). 400: sandbox_only; validation_error with details per field, nothing stored (file, from_number, to_number as for POST /v1/faxes); no_phone_number. 429 fax_limit_exceeded with Retry-After when the account already received fax_inbound_per_hour faxes (account config, default 25) in the last hour.\n\n${RENDERING}`,
            tag: TAG,
            auth: rule,
            response: S.Fax,
            errors: { 400: ['sandbox_only', 'no_phone_number'], 429: ['fax_limit_exceeded'] },
          }),
          'x-extension': true,
        },
      },
    )
}
