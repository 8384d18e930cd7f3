/** Faxes (spec, "Faxes, Files, Hardware Orders", "Fax", "Fax events"). */
import { File } from './media'
import { DateTime, Id, Nullable, T } from './common'

const oneOf = <V extends string>(values: readonly V[], description?: string) =>
  T.Union(values.map((v) => T.Literal(v)) as never as [ReturnType<typeof T.Literal<V>>], description ? { description } : {})

export const FAX_STATUSES = ['queued', 'sending', 'delivered', 'failed', 'received'] as const
export const FaxStatus = oneOf(
  FAX_STATUSES,
  'outbound: queued (accepted), sending (dialled, transmitting), then delivered or failed (final); inbound: received (final). The spec shows no values: these are the service’s.',
)
export const FaxDirection = oneOf(['inbound', 'outbound'] as const)
export const FaxTransport = Nullable(oneOf(['t38', 'g711'] as const, 't38 (fax over IP) or g711 (audio); null: never transmitted'))

const Rendering = T.Union(
  [
    T.Object({
      status: T.Literal('rendered'),
      format: T.Literal('tiff_g3', { description: 'TIFF, CCITT Group 3 (1-D) pages, the format fax machines take (TIFF-F / G3)' }),
      resolution: T.Literal('204x196', { description: 'dpi: fax fine resolution' }),
      pages: T.Integer({ description: 'TIFF pages rendered (one per PDF page)' }),
      file: T.String({ description: 'the TIFF as a file of the account (image/tiff)' }),
      size: T.Integer({ description: 'bytes' }),
      url: T.String({ description: 'signed download URL of the TIFF' }),
      url_expires_at: DateTime(),
    }),
    T.Object({
      status: T.Literal('skipped'),
      reason: T.String({ description: 'why the document was not rendered (ghostscript missing on the host, or it failed)' }),
    }),
    T.Object({ status: T.Literal('not_applicable') }),
  ],
  { description: 'The document as fax machines take it (an extension beyond the spec), kept next to the fax for the media plane (T.38 or G.711).' },
)

export const Fax = T.Object({
  id: T.String(),
  object: T.Literal('fax'),
  direction: FaxDirection,
  status: FaxStatus,
  did: T.String({ description: 'the account’s number: the sender of an outbound fax, the receiver of an inbound one' }),
  from_number: T.String(),
  to_number: T.String(),
  file: T.Union([Nullable(T.String({ description: 'the document’s file ID (POST /v1/files)' })), File], {
    description: 'the document: its file ID, or the file with expand[]=file',
  }),
  pages: T.Integer({ minimum: 1, description: 'pages of the document, counted from the PDF itself' }),
  pages_transmitted: Nullable(
    T.Integer({
      minimum: 0,
      description: 'pages confirmed delivered or received; null while (or if) never transmitting, 0 when it failed before the first page',
    }),
  ),
  transport: FaxTransport,
  error_code: Nullable(
    T.String({ description: 'failed faxes: dial_busy, dial_no_answer, max_attempts_exceeded, fax_failed, or cancelled (deleted while in flight)' }),
  ),
  is_read: T.Boolean({ description: 'inbound faxes arrive unread; outbound faxes are read' }),
  rendering: Rendering,
  created_at: DateTime(),
  updated_at: DateTime(),
  completed_at: Nullable(DateTime()),
})

export const SendFaxRequest = T.Object(
  {
    file: Id('ID of the document: a PDF uploaded with POST /v1/files, purpose fax_document'),
    to_number: T.String({ description: 'destination, E.164' }),
    from_number: T.Optional(T.String({ description: 'an active phone number of the account, E.164 (default: its first)' })),
  },
  { additionalProperties: false },
)

export const InboundFaxRequest = T.Object(
  {
    file: Id('ID of the document the sender faxes: a PDF uploaded with POST /v1/files, purpose fax_document'),
    from_number: T.String({ description: 'the sender, E.164' }),
    to_number: T.Optional(T.String({ description: 'an active phone number of the account, E.164 (default: its first)' })),
    transport: T.Optional(oneOf(['t38', 'g711'] as const, 'how it arrives (default t38)')),
  },
  { additionalProperties: false },
)

export const DeletedFax = T.Object({ id: T.String(), object: T.Literal('fax'), deleted: T.Literal(true) })
