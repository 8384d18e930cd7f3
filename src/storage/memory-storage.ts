/** Blob storage that keeps nothing past the process: for DATA_DIR=memory:// and tests. */
import { assertValidKey, type BlobStorage, type StoredBlob } from './blob-storage'

export function memoryStorage(): BlobStorage {
  const blobs = new Map<string, StoredBlob>()
  return {
    async put(key, bytes, contentType) {
      assertValidKey(key)
      // Copy in and out so a caller mutating its buffer cannot change what is stored,
      // matching what the disk driver does by nature.
      blobs.set(key, { bytes: bytes.slice(), contentType })
    },
    async get(key) {
      assertValidKey(key)
      const blob = blobs.get(key)
      return blob && { bytes: blob.bytes.slice(), contentType: blob.contentType }
    },
    async delete(key) {
      assertValidKey(key)
      blobs.delete(key)
    },
  }
}
