/**
 * File uploads: the one exception to "bodies are JSON". On the upload routes (and
 * only there) a body may be multipart/form-data (a `file` part and text fields) or
 * a raw audio/* body (the file alone), read with the size limit enforced while the
 * bytes arrive, so an oversized upload is refused without being held in memory.
 */
import { createHash } from 'node:crypto'
import { Type as T } from '@sinclair/typebox'
import { ValidationError } from '../src/errors'

/** Largest uploaded file: 3 MiB (about 3 minutes of 128 kbit/s MP3), under the HTTP server's hard body limit. */
export const MAX_UPLOAD_BYTES = 3 * 1024 * 1024
/** Room for multipart boundaries and the text fields around the file. */
const MULTIPART_OVERHEAD = 64 * 1024

/** POST routes that take an upload (paths as requested, ids as path segments). */
const UPLOAD_ROUTES = [/^\/v1\/files$/, /^\/v1\/audio_clips$/, /^\/v1\/voicemail_greetings\/[^/]+\/[^/]+$/, /^\/v1\/port-orders\/[^/]+\/(bill-copy|csr)$/]

export function isUploadRoute(method: string, path: string): boolean {
  return method === 'POST' && UPLOAD_ROUTES.some((r) => r.test(path))
}

/** The media types an upload route reads; anything else goes to the JSON parser (and is refused there). */
export function uploadKind(contentType: string): 'multipart' | 'raw' | undefined {
  const type = contentType.split(';')[0]!.trim().toLowerCase()
  if (type === 'multipart/form-data') return 'multipart'
  if (type.startsWith('audio/')) return 'raw'
  return undefined
}

/** An uploaded file. Idempotency and the audit log see its summary (toJSON), never its bytes. */
export class UploadedFile {
  constructor(
    readonly bytes: Uint8Array,
    readonly filename: string | null,
    readonly contentType: string,
  ) {}

  toJSON() {
    return {
      filename: this.filename,
      content_type: this.contentType,
      size: this.bytes.length,
      sha256: createHash('sha256').update(this.bytes).digest('hex'),
    }
  }
}

/** A parsed upload body: the `file` part (when sent) and the text fields beside it. */
export type UploadBody = { file?: UploadedFile } & Record<string, string | UploadedFile | undefined>

const tooLarge = () => new ValidationError({ file: `must be at most ${MAX_UPLOAD_BYTES} bytes` }, 'The uploaded file is too large.')

/** Refuses by Content-Length before reading, when the client declared one. */
export function checkUploadLength(declared: number): void {
  if (declared > MAX_UPLOAD_BYTES + MULTIPART_OVERHEAD) throw tooLarge()
}

async function readLimited(request: Request, limit: number): Promise<Uint8Array> {
  const reader = request.body?.getReader()
  if (!reader) return new Uint8Array()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.length
    if (total > limit) {
      await reader.cancel()
      throw tooLarge()
    }
    chunks.push(value)
  }
  const out = new Uint8Array(total)
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.length
  }
  return out
}

export async function parseUpload(request: Request, contentType: string, kind: 'multipart' | 'raw'): Promise<UploadBody> {
  if (kind === 'raw') {
    const bytes = await readLimited(request, MAX_UPLOAD_BYTES)
    return { file: new UploadedFile(bytes, null, contentType.split(';')[0]!.trim().toLowerCase()) }
  }
  const bytes = await readLimited(request, MAX_UPLOAD_BYTES + MULTIPART_OVERHEAD)
  let form: Awaited<ReturnType<Response['formData']>>
  try {
    // The full header: the parser may be handed the media type without its boundary.
    form = await new Response(bytes, { headers: { 'content-type': request.headers.get('content-type') ?? contentType } }).formData()
  } catch {
    throw new ValidationError({ body: 'is not valid multipart/form-data' })
  }
  const body: UploadBody = {}
  for (const [name, value] of form.entries()) {
    if (name in body) throw new ValidationError({ [name]: 'is given more than once' })
    if (typeof value === 'string') body[name] = value
    else {
      const data = new Uint8Array(await value.arrayBuffer())
      if (data.length > MAX_UPLOAD_BYTES) throw tooLarge()
      body[name] = new UploadedFile(data, value.name || null, (value.type || 'application/octet-stream').toLowerCase())
    }
  }
  return body
}

/** The `file` part, required. */
export function requireFile(body: unknown): UploadedFile {
  const file = (body as UploadBody | null)?.file
  if (!(file instanceof UploadedFile)) {
    throw new ValidationError({
      file: 'is required: send multipart/form-data with a file part named "file", or the audio itself as the body with an audio/* Content-Type',
    })
  }
  return file
}

/** A text field of a multipart upload; `file` parts under other names are refused. */
export function textField(body: unknown, name: string): string | undefined {
  const v = (body as UploadBody | null)?.[name]
  if (v instanceof UploadedFile) throw new ValidationError({ [name]: 'must be a text field, not a file' })
  return v
}

/** Refuses fields this upload does not take (a misspelt field is an error, as in JSON bodies). */
export function onlyFields(body: unknown, allowed: string[]): void {
  const extra = Object.keys((body as UploadBody | null) ?? {}).filter((k) => k !== 'file' && !allowed.includes(k))
  if (extra.length > 0) throw new ValidationError(Object.fromEntries(extra.map((k) => [k, 'is not a field of this upload'])))
}

/** An operation's documentation (op(...)) with the request body of an upload route: multipart with `file` (plus `fields`), or raw audio. */
export function withUploadBody<D extends Record<string, unknown>>(
  detail: D,
  fields: Record<string, { type: 'string'; description: string; enum?: string[] }>,
  required: string[],
  rawAudio: boolean,
): D {
  const multipart = T.Object(
    {
      file: T.String({ format: 'binary', description: `the file, at most ${MAX_UPLOAD_BYTES} bytes` }),
      ...Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, T.Optional(T.Unsafe<string>(v))])),
    },
    { required: ['file', ...required] },
  )
  const requestBody = {
    required: true,
    content: {
      'multipart/form-data': { schema: multipart },
      ...(rawAudio ? { 'audio/*': { schema: { type: 'string', format: 'binary', description: 'the audio file itself (no other fields)' } } } : {}),
    },
  }
  return { ...detail, requestBody }
}
