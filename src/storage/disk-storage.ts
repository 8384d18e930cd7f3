/**
 * Blob storage in plain files under one folder (`${DATA_DIR}/blobs`): the blob is the
 * file itself (a recording is a playable .wav an operator can copy), its content type
 * sits beside it under `.meta/`, and writes go through `.tmp/` so that a crash or a
 * concurrent reader never sees a half-written file.
 */
import { randomBytes } from 'node:crypto'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { assertValidKey, type BlobStorage } from './blob-storage'

const DEFAULT_TYPE = 'application/octet-stream'

function isMissing(err: unknown): boolean {
  const code = (err as { code?: string }).code
  return code === 'ENOENT' || code === 'EISDIR' || code === 'ENOTDIR'
}

export function diskStorage(dir: string): BlobStorage {
  const tmpDir = join(dir, '.tmp')
  const metaPath = (key: string) => join(dir, '.meta', `${key}.json`)

  // rename() is atomic only within one file system, so the temp file lives under `dir`.
  async function atomicWrite(path: string, data: Uint8Array | string): Promise<void> {
    await mkdir(tmpDir, { recursive: true })
    await mkdir(dirname(path), { recursive: true })
    const tmp = join(tmpDir, `${randomBytes(12).toString('hex')}.part`)
    try {
      await writeFile(tmp, data)
      await rename(tmp, path)
    } catch (err) {
      await rm(tmp, { force: true })
      throw err
    }
  }

  return {
    async put(key, bytes, contentType) {
      assertValidKey(key)
      // Metadata first: a reader that sees the new bytes also sees their type.
      await atomicWrite(metaPath(key), JSON.stringify({ contentType }))
      await atomicWrite(join(dir, key), bytes)
    },
    async get(key) {
      assertValidKey(key)
      let bytes: Uint8Array
      try {
        bytes = new Uint8Array(await readFile(join(dir, key)))
      } catch (err) {
        if (isMissing(err)) return undefined
        throw err
      }
      let contentType = DEFAULT_TYPE
      try {
        contentType = (JSON.parse(await readFile(metaPath(key), 'utf8')) as { contentType?: string }).contentType ?? DEFAULT_TYPE
      } catch (err) {
        // Bytes without metadata (copied in by hand): still served, as opaque bytes.
        if (!isMissing(err)) throw err
      }
      return { bytes, contentType }
    },
    async delete(key) {
      assertValidKey(key)
      // Bytes first: once they are gone the blob is gone, whatever happens to the metadata.
      await rm(join(dir, key), { force: true })
      await rm(metaPath(key), { force: true })
    },
  }
}
