import { describe, expect, test } from 'bun:test'
import { PDFDocument } from 'pdf-lib'
import { pdfText } from '../../../test/support/pdf'
import type { PortOrderDetailsRow } from '../../db/schema'
import { letterOfAuthorization, winAnsi } from './letter-of-authorization'

const details = (o: Partial<PortOrderDetailsRow> = {}): PortOrderDetailsRow => ({
  phone_numbers: ['+12125552000', '+12125557001'],
  subscriber: {
    btn: '+12125550123',
    business_name: 'Acme Dental',
    approver_name: 'Ada Owner',
    account_number: 'ACCT-991',
    pin: '8642',
    address: { house_number: '100', street_name: 'Main St', city: 'Springfield', state: 'IL', zip: '62701' },
  },
  approval: { signature: 'Ada Owner', ip: '203.0.113.7', timestamp: '2026-06-01T14:03:00.000Z' },
  requested_foc_date: '2026-06-15',
  requested_foc_time: '10:00',
  rejection: null,
  ...o,
})
const carriers = [
  { phone_number: '+12125552000', losing_carrier_name: 'Sandbox Telecom', losing_carrier_spid: '0123', is_wireless: false, account_number_required: false },
  { phone_number: '+12125557001', losing_carrier_name: 'Sandbox Wireless', losing_carrier_spid: '6529', is_wireless: true, account_number_required: true },
]
const at = new Date('2026-06-02T09:00:00.000Z')
const gsMissing = !Bun.which('gs')
if (gsMissing) console.warn('[letter-of-authorization] ghostscript (gs) is not installed: the text read-back assertions are skipped')

describe('the letter of authorization', () => {
  test('a real PDF that states the order, the subscriber, each number with its losing carrier and the approval, without the PIN', async () => {
    const bytes = await letterOfAuthorization({ order_id: 'po_01test', details: details(), carriers, generated_at: at })
    const doc = await PDFDocument.load(bytes)
    expect(doc.getPageCount()).toBe(1)
    expect(doc.getTitle()).toBe('Letter of Authorization - port order po_01test')
    const text = await pdfText(bytes)
    if (text === null) return
    for (const s of [
      'Letter of Authorization',
      'po_01test',
      'Acme Dental',
      'Ada Owner',
      '100 Main St, Springfield, IL 62701',
      '+12125550123',
      'ACCT-991',
      '+12125552000 losing carrier: Sandbox Telecom (SPID 0123)',
      '+12125557001 losing carrier: Sandbox Wireless (SPID 6529), wireless',
      '2026-06-15',
      '10:00',
      'Signed from IP address: 203.0.113.7',
      'Signed at: 2026-06-01T14:03:00.000Z',
    ])
      expect(text).toContain(s)
    expect(text).not.toContain('8642')
  })

  test('many numbers flow onto further pages; long words are cut, not dropped', async () => {
    const numbers = Array.from({ length: 120 }, (_, i) => `+1212555${String(1000 + i)}`)
    const long = 'X'.repeat(300)
    const bytes = await letterOfAuthorization({
      order_id: 'po_many',
      details: details({ phone_numbers: numbers, subscriber: { ...details().subscriber, business_name: long } }),
      carriers: [],
      generated_at: at,
    })
    expect((await PDFDocument.load(bytes)).getPageCount()).toBeGreaterThan(1)
    const text = await pdfText(bytes)
    if (text === null) return
    for (const n of [numbers[0]!, numbers[119]!]) expect(text).toContain(n)
    expect(text.replace(/\s+/g, '').split('X').length - 1).toBeGreaterThanOrEqual(300 * 2)
  })

  test('names outside WinAnsi are written in their closest Latin form, never fail the submission', async () => {
    expect(winAnsi('Zoë’s Café – 李')).toBe("Zoe's Cafe - ?")
    const bytes = await letterOfAuthorization({
      order_id: 'po_intl',
      details: details({ subscriber: { ...details().subscriber, business_name: 'Zoë’s Café 李记', approver_name: 'Łukasz Ørsted' } }),
      carriers,
      generated_at: at,
    })
    const text = await pdfText(bytes)
    if (text === null) return
    expect(text).toContain("Zoe's Cafe ??")
  })

  test('an order without an approval has no letter', async () => {
    await expect(letterOfAuthorization({ order_id: 'po_x', details: details({ approval: null }), carriers, generated_at: at })).rejects.toThrow('no approval')
  })
})
