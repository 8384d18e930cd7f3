/** Uploaded files (POST /v1/files): stored as sent, after checking they are what their purpose says. */
import type { Clock } from '../../clock'
import type { Db } from '../../db/client'
import { files } from '../../db/schema'
import { ValidationError } from '../../errors'
import { newId } from '../../ids'
import type { BlobStorage } from '../../storage/blob-storage'
import type { AudioUpload } from './audio-clips'
import { convertUpload, type DownloadSigning, signedUrl } from './stored-audio'
import type { AudioConverter } from './telephony-audio'

export type FileRow = typeof files.$inferSelect
export type FilePurpose = FileRow['purpose']

export function fileView(row: FileRow, signing: DownloadSigning) {
  return {
    id: row.id,
    object: 'file' as const,
    account: row.accountId,
    purpose: row.purpose,
    filename: row.filename,
    content_type: row.contentType,
    size: row.sizeBytes,
    ...signedUrl(signing, row.storageKey, row.contentType),
    created_at: row.createdAt.toISOString(),
  }
}

/** The content type of a fax document, from its first bytes. */
function documentType(bytes: Uint8Array): string | undefined {
  const head = String.fromCharCode(...bytes.subarray(0, 5))
  if (head === '%PDF-') return 'application/pdf'
  if (head.startsWith('II*\0') || head.startsWith('MM\0*')) return 'image/tiff'
  return undefined
}

export async function createFile(
  tx: Db,
  fx: { clock: Clock; storage: BlobStorage; convert: AudioConverter },
  accountId: string,
  input: { purpose: FilePurpose; file: AudioUpload },
): Promise<FileRow> {
  const { bytes, filename } = input.file
  if (bytes.length === 0) throw new ValidationError({ file: 'empty: the file is empty' })
  let contentType: string
  if (input.purpose === 'audio') {
    // Decoded to prove it plays; the file itself is kept as uploaded.
    const audio = await convertUpload(fx.convert, bytes)
    contentType = audio.source.format === 'wav' ? 'audio/wav' : 'audio/mpeg'
  } else {
    const detected = documentType(bytes)
    if (!detected) throw new ValidationError({ file: 'not_document: a fax_document must be a PDF or TIFF file' })
    contentType = detected
  }
  const id = newId('file')
  const storageKey = `files/${accountId}/${id}`
  const [row] = await tx
    .insert(files)
    .values({ id, accountId, purpose: input.purpose, filename, contentType, sizeBytes: bytes.length, storageKey, createdAt: fx.clock.now() })
    .returning()
  await fx.storage.put(storageKey, bytes, contentType)
  return row!
}
