/**
 * The letter of authorization (LOA): the document a gaining carrier sends the losing
 * carrier as proof that the subscriber asked for the port. It is generated at submit
 * from the order as approved (subscriber, numbers with their losing carriers, the
 * requested FOC, and the approval's signature, IP address and time), stored as the
 * order's `loa` document and forwarded to the carrier with the submission.
 *
 * The port-out PIN is not printed: the carrier gets it in the order itself, and the
 * LOA is downloadable by anyone who can read the order.
 */
import { PDFDocument, type PDFFont, type PDFPage, rgb, StandardFonts } from 'pdf-lib'
import type { PortOrderDetailsRow } from '../../db/schema'
import type { PortableNumber } from './carrier'

export interface LetterOfAuthorizationInput {
  order_id: string
  details: PortOrderDetailsRow
  /** The losing carrier of each number, as the eligibility check reports it. */
  carriers: PortableNumber[]
  generated_at: Date
}

const PAGE: [number, number] = [612, 792] // US Letter, in points
const MARGIN = 56
const SIZE = 10.5
const LEADING = 15

/**
 * The standard PDF fonts encode WinAnsi only: anything else (a name in another script)
 * is written as its closest Latin form, or "?" when it has none, rather than failing
 * the submission.
 */
export function winAnsi(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[‘’]/g, "'")
    .replace(/[“”]/g, '"')
    .replace(/[–—]/g, '-')
    .replace(/[^\x20-\x7e\xa0-\xff]/g, '?')
}

/** Lines of at most `width` points, broken between words (a word longer than the line is cut). */
function wrap(text: string, font: PDFFont, size: number, width: number): string[] {
  const out: string[] = []
  let line = ''
  for (const word of text.split(/\s+/).filter(Boolean)) {
    const next = line ? `${line} ${word}` : word
    if (font.widthOfTextAtSize(next, size) <= width) {
      line = next
      continue
    }
    if (line) out.push(line)
    let rest = word
    while (font.widthOfTextAtSize(rest, size) > width) {
      let cut = rest.length - 1
      while (cut > 1 && font.widthOfTextAtSize(rest.slice(0, cut), size) > width) cut--
      out.push(rest.slice(0, cut))
      rest = rest.slice(cut)
    }
    line = rest
  }
  if (line) out.push(line)
  return out
}

/** A page writer that moves down as it writes and starts a new page when one is full. */
class Writer {
  private page: PDFPage
  private y: number
  constructor(
    private readonly doc: PDFDocument,
    private readonly regular: PDFFont,
    private readonly bold: PDFFont,
  ) {
    this.page = doc.addPage(PAGE)
    this.y = PAGE[1] - MARGIN
  }
  private room(lines: number) {
    if (this.y - lines * LEADING >= MARGIN) return
    this.page = this.doc.addPage(PAGE)
    this.y = PAGE[1] - MARGIN
  }
  text(s: string, opts: { bold?: boolean; size?: number } = {}) {
    const font = opts.bold ? this.bold : this.regular
    const size = opts.size ?? SIZE
    for (const line of wrap(winAnsi(s), font, size, PAGE[0] - 2 * MARGIN)) {
      this.room(1)
      this.page.drawText(line, { x: MARGIN, y: this.y, size, font, color: rgb(0, 0, 0) })
      this.y -= size > SIZE ? size + 6 : LEADING
    }
  }
  field(label: string, value: string | null | undefined) {
    this.text(`${label}: ${value && value.trim() !== '' ? value : '(not given)'}`)
  }
  gap() {
    this.y -= LEADING / 2
  }
}

function addressLine(a: PortOrderDetailsRow['subscriber']['address']): string | null {
  if (!a) return null
  const street = [a.house_number, a.street_name].filter(Boolean).join(' ')
  const place = [a.city, [a.state, a.zip].filter(Boolean).join(' ')].filter(Boolean).join(', ')
  return [street, place].filter(Boolean).join(', ') || null
}

/** The letter as a PDF. Refuses an order without an approval: there is nothing to attest. */
export async function letterOfAuthorization(input: LetterOfAuthorizationInput): Promise<Uint8Array> {
  const { details: d } = input
  const approval = d.approval
  if (!approval) throw new Error(`port order ${input.order_id} has no approval: no letter of authorization can be written`)
  const doc = await PDFDocument.create()
  doc.setTitle(`Letter of Authorization - port order ${input.order_id}`)
  doc.setSubject('Local number portability: letter of authorization')
  doc.setCreationDate(input.generated_at)
  doc.setModificationDate(input.generated_at)
  doc.setProducer('business-voice')
  doc.setCreator('business-voice')
  const w = new Writer(doc, await doc.embedFont(StandardFonts.Helvetica), await doc.embedFont(StandardFonts.HelveticaBold))
  const s = d.subscriber
  const carriers = new Map(input.carriers.map((c) => [c.phone_number, c]))

  w.text('Letter of Authorization (LOA)', { bold: true, size: 16 })
  w.text('Local number portability: request to port telephone numbers')
  w.gap()
  w.field('Port order', input.order_id)
  w.field('Generated', input.generated_at.toISOString())
  w.gap()
  w.text('Subscriber (as on the losing carrier\u2019s records)', { bold: true })
  w.field('Business name', s.business_name)
  w.field('Authorized person', s.approver_name)
  w.field('Service address', addressLine(s.address))
  w.field('Billing telephone number (BTN)', s.btn)
  w.field('Account number with the losing carrier', s.account_number)
  w.field('Port-out PIN', s.pin ? 'provided to the carrier with the order (not printed)' : null)
  w.gap()
  w.text(`Telephone numbers to port (${d.phone_numbers.length})`, { bold: true })
  for (const n of d.phone_numbers) {
    const c = carriers.get(n)
    w.text(c ? `${n}   losing carrier: ${c.losing_carrier_name} (SPID ${c.losing_carrier_spid})${c.is_wireless ? ', wireless' : ''}` : n)
  }
  w.gap()
  w.text('Requested port date', { bold: true })
  w.field('Firm order commitment (FOC) date', d.requested_foc_date)
  w.field('Time (US Eastern)', d.requested_foc_time ?? 'any time of the business day')
  w.gap()
  w.text('Authorization', { bold: true })
  w.text(
    `I, ${s.approver_name ?? 'the undersigned'}, am authorized to act for ${s.business_name ?? 'the subscriber'} and ask that the telephone numbers listed above be ported from their current carrier to the gaining carrier named by this service. I authorize the gaining carrier and its agents to act on my behalf to obtain the port, and to receive the customer service record of these numbers. I understand that the services of the losing carrier on these numbers end when the port completes, and that I remain responsible for any amounts owed to it.`,
  )
  w.gap()
  w.field('Signature', approval.signature)
  w.field('Signed from IP address', approval.ip)
  w.field('Signed at', approval.timestamp)
  return doc.save({ useObjectStreams: false })
}
