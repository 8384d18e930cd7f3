/**
 * Where recordings, voicemails and other binary blobs live. Services talk to this
 * interface only, so a bucket driver can replace the disk later without touching them.
 */
export interface StoredBlob {
  bytes: Uint8Array
  contentType: string
}

export interface BlobStorage {
  /** Store (or replace) the blob under `key`. Readers see the old or the new blob, never a mix. */
  put(key: string, bytes: Uint8Array, contentType: string): Promise<void>
  /** The blob, or undefined when nothing is stored under `key`. */
  get(key: string): Promise<StoredBlob | undefined>
  /** Remove the blob; removing a missing key is not an error (deletes are retried). */
  delete(key: string): Promise<void>
}

export class InvalidBlobKeyError extends Error {}

// One segment: starts with a letter, digit, '_' or '-', so '.', '..' and hidden names
// (which the disk driver keeps for its own metadata and temp files) cannot be keys.
const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/

/**
 * Keys are relative paths like `recordings/acc_1/rec_1.wav`. Checked by every driver,
 * not just the disk one, so a key that works in tests also works in production.
 */
export function assertValidKey(key: string): void {
  if (typeof key !== 'string' || key.length === 0 || key.length > 512) {
    throw new InvalidBlobKeyError('blob key must be 1 to 512 characters')
  }
  const segments = key.split('/')
  for (const s of segments) {
    if (!SEGMENT.test(s)) throw new InvalidBlobKeyError(`blob key "${key}" is not a safe relative path`)
  }
}
