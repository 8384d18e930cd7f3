/** Real PDFs for the fax tests: `pages` pages of text, a well-formed file (xref offsets and all) that ghostscript renders. */
export function makePdf(pages: number, title = 'Fax'): Uint8Array {
  const objects: string[] = []
  const kids = Array.from({ length: pages }, (_, i) => `${4 + 2 * i} 0 R`).join(' ')
  objects.push('<< /Type /Catalog /Pages 2 0 R >>')
  objects.push(`<< /Type /Pages /Kids [${kids}] /Count ${pages} >>`)
  objects.push('<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>')
  for (let i = 0; i < pages; i++) {
    const text = `BT /F1 24 Tf 72 700 Td (${title} - page ${i + 1} of ${pages}) Tj ET`
    objects.push(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + 2 * i} 0 R >>`)
    objects.push(`<< /Length ${text.length} >>\nstream\n${text}\nendstream`)
  }
  let out = '%PDF-1.4\n'
  const offsets: number[] = []
  objects.forEach((body, i) => {
    offsets.push(out.length)
    out += `${i + 1} 0 obj\n${body}\nendobj\n`
  })
  const xref = out.length
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`
  for (const o of offsets) out += `${String(o).padStart(10, '0')} 00000 n \n`
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return new TextEncoder().encode(out)
}

/**
 * The text of a PDF as ghostscript reads it (its txtwrite device), or null when
 * ghostscript is not installed. Reading a document back with another program is what
 * proves it is a real PDF, not only bytes that start with %PDF-.
 */
export async function pdfText(bytes: Uint8Array): Promise<string | null> {
  const gs = Bun.which('gs')
  if (!gs) return null
  const p = Bun.spawn([gs, '-q', '-dNOPAUSE', '-dBATCH', '-dSAFER', '-sDEVICE=txtwrite', '-sOutputFile=-', '-'], {
    stdin: bytes,
    stdout: 'pipe',
    stderr: 'pipe',
  })
  const [text, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
  if (code !== 0) throw new Error(`ghostscript could not read the PDF (exit ${code}): ${err.slice(0, 500)}`)
  // txtwrite lays text out in columns with runs of spaces: one space is enough to search in.
  return text.replace(/[ \t]+/g, ' ')
}
