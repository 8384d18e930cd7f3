/**
 * Fax documents: how many pages a PDF has (read from the document itself), and its
 * rendering the way fax machines take it (TIFF with CCITT Group 3 pages at the fax
 * resolution 204x196 dpi), by ghostscript (the Debian `gs` program, run as a
 * subprocess) when this host has it.
 *
 * The page count comes from the PDF's page tree: the root /Type /Pages node (the one
 * without /Parent) holds /Count, the number of leaf pages. Objects inside compressed
 * object streams (PDF 1.5+) are inflated and read too. When the tree cannot be read
 * and ghostscript is present, its own count (`pdfpagecount`, run with -dSAFER and
 * leave to read that one file only) is used; otherwise the
 * document is refused (400, details.file). A count is never guessed.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inflateSync } from 'node:zlib'

/** Ghostscript's path on this host, or undefined. */
export const ghostscript = (): string | undefined => Bun.which('gs') ?? undefined

const latin1 = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1')

/** The bodies of the PDF's objects (plain and inside object streams). */
function pdfObjects(text: string): string[] {
  const out: string[] = []
  const re = /\d+\s+\d+\s+obj\b([\s\S]*?)endobj/g
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const body = m[1]!
    out.push(body)
    if (/\/Type\s*\/ObjStm\b/.test(body)) out.push(...objectStream(body))
  }
  return out
}

/** The objects of one compressed object stream (/Type /ObjStm, /N objects, /First offset). */
function objectStream(body: string): string[] {
  const s = /stream\r?\n/.exec(body)
  const e = body.lastIndexOf('endstream')
  if (!s || e < 0) return []
  const raw = Buffer.from(body.slice(s.index + s[0].length, e), 'latin1')
  let data: string
  try {
    data = /\/FlateDecode/.test(body.slice(0, s.index)) ? inflateSync(raw).toString('latin1') : raw.toString('latin1')
  } catch {
    return []
  }
  const n = Number(/\/N\s+(\d+)/.exec(body)?.[1] ?? 0)
  const first = Number(/\/First\s+(\d+)/.exec(body)?.[1] ?? 0)
  const header = data.slice(0, first).trim().split(/\s+/).map(Number)
  const offsets: number[] = []
  for (let i = 0; i < n; i++) offsets.push(header[2 * i + 1]!)
  return offsets.map((o, i) => data.slice(first + o, i + 1 < offsets.length ? first + offsets[i + 1]! : undefined))
}

/** Pages of the PDF from its page tree, or undefined when the tree cannot be read. */
export function pdfPageCountFromTree(bytes: Uint8Array): number | undefined {
  const text = latin1(bytes)
  if (!text.startsWith('%PDF-')) return undefined
  let count: number | undefined
  for (const body of pdfObjects(text)) {
    // The dictionary's own keys: a /Type /Pages node that has no /Parent is the root.
    if (!/\/Type\s*\/Pages\b/.test(body) || /\/Parent\b/.test(body)) continue
    const m = /\/Count\s+(\d+)/.exec(body)
    // A file with incremental updates holds every version of the root: the last one written is the document's.
    if (m) count = Number(m[1])
  }
  return count !== undefined && count > 0 ? count : undefined
}

async function run(cmd: string[], timeoutMs = 30_000): Promise<{ code: number; stdout: string; stderr: string }> {
  const p = Bun.spawn(cmd, { stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' })
  const timer = setTimeout(() => p.kill(), timeoutMs)
  try {
    const [stdout, stderr, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited])
    return { code, stdout, stderr }
  } finally {
    clearTimeout(timer)
  }
}

async function withTempDir<T>(work: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'fax-'))
  try {
    return await work(dir)
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}

/** Ghostscript's page count of the PDF, or undefined (no gs, or it cannot read the file). */
export async function pdfPageCountByGhostscript(bytes: Uint8Array): Promise<number | undefined> {
  const gs = ghostscript()
  if (!gs) return undefined
  return withTempDir(async (dir) => {
    const file = join(dir, 'in.pdf')
    await writeFile(file, bytes)
    // SAFER, reading only this one file: the PDF is the customer's.
    const r = await run([gs, '-q', '-dNODISPLAY', '-dSAFER', `--permit-file-read=${file}`, '-c', `(${file}) (r) file runpdfbegin pdfpagecount = quit`])
    const n = Number(r.stdout.trim().split(/\s+/).pop())
    return r.code === 0 && Number.isInteger(n) && n > 0 ? n : undefined
  })
}

/** The PDF's page count (the page tree, else ghostscript), or undefined when neither can read it. */
export async function pdfPageCount(bytes: Uint8Array): Promise<number | undefined> {
  return pdfPageCountFromTree(bytes) ?? (await pdfPageCountByGhostscript(bytes))
}

/** Pages (image file directories) of a TIFF file: the IFD chain from the header. */
export function tiffPageCount(bytes: Uint8Array): number {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const le = bytes[0] === 0x49
  let offset = v.getUint32(4, le)
  let pages = 0
  const seen = new Set<number>()
  while (offset !== 0 && offset + 2 <= bytes.length && !seen.has(offset)) {
    seen.add(offset)
    pages++
    const entries = v.getUint16(offset, le)
    const next = offset + 2 + entries * 12
    if (next + 4 > bytes.length) break
    offset = v.getUint32(next, le)
  }
  return pages
}

/** The TIFF's first page: its compression (3: CCITT Group 3) and resolution (dpi). */
export function tiffFirstPage(bytes: Uint8Array): { compression: number; xdpi: number; ydpi: number } {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const le = bytes[0] === 0x49
  const ifd = v.getUint32(4, le)
  const entries = v.getUint16(ifd, le)
  const out = { compression: 0, xdpi: 0, ydpi: 0 }
  const rational = (at: number) => v.getUint32(at, le) / v.getUint32(at + 4, le)
  for (let i = 0; i < entries; i++) {
    const e = ifd + 2 + i * 12
    const tag = v.getUint16(e, le)
    if (tag === 259) out.compression = v.getUint16(e + 8, le)
    if (tag === 282) out.xdpi = rational(v.getUint32(e + 8, le))
    if (tag === 283) out.ydpi = rational(v.getUint32(e + 8, le))
  }
  return out
}

export const FAX_RESOLUTION = '204x196' as const

export type FaxRender = { rendered: true; tiff: Uint8Array; pages: number } | { rendered: false; reason: string }

/** The PDF as a TIFF G3 fax document at 204x196 dpi (one TIFF page per PDF page), or why it was not rendered. */
export async function renderFaxTiff(pdf: Uint8Array): Promise<FaxRender> {
  const gs = ghostscript()
  if (!gs) return { rendered: false, reason: 'ghostscript (gs) is not installed on this host: the document was not rendered to TIFF G3' }
  return withTempDir(async (dir) => {
    const input = join(dir, 'in.pdf')
    const output = join(dir, 'out.tif')
    await writeFile(input, pdf)
    // Every page fitted to a US letter fax page (1734 dots across at 204 dpi), whatever the PDF's page size.
    const r = await run(
      [
        gs,
        '-q',
        '-dSAFER',
        '-dBATCH',
        '-dNOPAUSE',
        '-sDEVICE=tiffg3',
        `-r${FAX_RESOLUTION}`,
        '-sPAPERSIZE=letter',
        '-dFIXEDMEDIA',
        '-dPDFFitPage',
        `-sOutputFile=${output}`,
        input,
      ],
      60_000,
    )
    if (r.code !== 0) return { rendered: false, reason: `ghostscript could not render the document (exit ${r.code})` }
    const tiff = new Uint8Array(await readFile(output))
    return { rendered: true, tiff, pages: tiffPageCount(tiff) }
  })
}
