/** Chooses the blob storage driver from configuration, as the database does from DATA_DIR. */
import { join } from 'node:path'
import type { Config } from '../config'
import type { BlobStorage } from './blob-storage'
import { diskStorage } from './disk-storage'
import { memoryStorage } from './memory-storage'

export function createStorage(config: Pick<Config, 'dataDir'>): BlobStorage {
  if (config.dataDir === 'memory://') return memoryStorage()
  return diskStorage(join(config.dataDir, 'blobs'))
}

export { assertValidKey, InvalidBlobKeyError, type BlobStorage, type StoredBlob } from './blob-storage'
export { diskStorage } from './disk-storage'
export { memoryStorage } from './memory-storage'
