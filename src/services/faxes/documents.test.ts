/**
 * Page counts read from the PDF itself (its page tree, compressed object streams
 * included) agree with ghostscript's, and the TIFF G3 rendering has one page per PDF
 * page at 204x196 dpi. The ghostscript parts skip, saying why, on a host without gs.
 */
import { describe, expect, test } from 'bun:test'
import { deflateSync } from 'node:zlib'
import { ghostscript, pdfPageCount, pdfPageCountByGhostscript, pdfPageCountFromTree, renderFaxTiff, tiffFirstPage, tiffPageCount } from './documents'

function makePdf(pages: number): Uint8Array {
  const objects: string[] = ['<< /Type /Catalog /Pages 2 0 R >>']
  // A two-level tree: the root's /Count is the number of leaves, not of its kids.
  objects.push(`<< /Type /Pages /Kids [3 0 R] /Count ${pages} >>`)
  const kids = Array.from({ length: pages }, (_, i) => `${4 + i} 0 R`).join(' ')
  objects.push(`<< /Type /Pages /Parent 2 0 R /Kids [${kids}] /Count ${pages} >>`)
  for (let i = 0; i < pages; i++) objects.push('<< /Type /Page /Parent 3 0 R /MediaBox [0 0 612 792] >>')
  let out = '%PDF-1.4\n'
  const offsets: number[] = []
  objects.forEach((body, i) => {
    offsets.push(out.length)
    out += `${i + 1} 0 obj\n${body}\nendobj\n`
  })
  const xref = out.length
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('')}`
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return new TextEncoder().encode(out)
}

/** The page tree (and the pages) in one /FlateDecode object stream, as PDF 1.5 writers keep them. */
function makeObjStmPdf(pages: number): Uint8Array {
  const inner = [`<< /Type /Pages /Kids [${Array.from({ length: pages }, (_, i) => `${3 + i} 0 R`).join(' ')}] /Count ${pages} >>`]
  for (let i = 0; i < pages; i++) inner.push('<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>')
  let header = ''
  let body = ''
  inner.forEach((o, i) => {
    header += `${2 + i} ${body.length} `
    body += `${o}\n`
  })
  const data = deflateSync(Buffer.from(header + body, 'latin1'))
  const head = `%PDF-1.5\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n${2 + pages} 0 obj\n<< /Type /ObjStm /N ${inner.length} /First ${header.length} /Filter /FlateDecode /Length ${data.length} >>\nstream\n`
  const tail = '\nendstream\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n'
  return new Uint8Array(Buffer.concat([Buffer.from(head, 'latin1'), data, Buffer.from(tail, 'latin1')]))
}

const gs = ghostscript()
const withGs = gs ? test : test.skip
if (!gs) console.warn('[fax documents] ghostscript (gs) is not installed: its page count and the TIFF G3 rendering are not tested here')

describe('page counts', () => {
  test('the root of the page tree gives the leaves', () => {
    for (const n of [1, 2, 7, 40]) expect(pdfPageCountFromTree(makePdf(n))).toBe(n)
  })

  test('not a PDF, or no page tree: no count (never a guess)', async () => {
    expect(pdfPageCountFromTree(new TextEncoder().encode('hello'))).toBeUndefined()
    const broken = new TextEncoder().encode('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\n%%EOF\n')
    expect(pdfPageCountFromTree(broken)).toBeUndefined()
    if (!gs) expect(await pdfPageCount(broken)).toBeUndefined()
  })

  test('inside a compressed object stream (PDF 1.5+)', () => {
    for (const n of [1, 3, 12]) expect(pdfPageCountFromTree(makeObjStmPdf(n))).toBe(n)
  })

  withGs('agrees with ghostscript', async () => {
    for (const n of [1, 5]) expect(await pdfPageCountByGhostscript(makePdf(n))).toBe(n)
  })
})

describe('rendering for fax machines', () => {
  withGs('TIFF G3 at 204x196 dpi, one page per PDF page', async () => {
    const r = await renderFaxTiff(makePdf(4))
    if (!r.rendered) throw new Error(r.reason)
    expect(r.pages).toBe(4)
    expect(tiffPageCount(r.tiff)).toBe(4)
    expect(tiffFirstPage(r.tiff)).toEqual({ compression: 3, xdpi: 204, ydpi: 196 })
  })
})
