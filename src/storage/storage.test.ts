/**
 * Both blob drivers obey the same contract (round trip, replace, delete, unsafe keys
 * refused); the disk driver also keeps files where operators expect them and leaves
 * no temp files behind.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createStorage, diskStorage, InvalidBlobKeyError, memoryStorage, type BlobStorage } from './create-storage'

const tempDirs: string[] = []
async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'voice-blobs-'))
  tempDirs.push(d)
  return d
}
afterAll(async () => {
  for (const d of tempDirs) await rm(d, { recursive: true, force: true })
})

const drivers: [string, () => Promise<BlobStorage>][] = [
  ['memory', async () => memoryStorage()],
  ['disk', async () => diskStorage(join(await tempDir(), 'blobs'))],
]

for (const [name, make] of drivers) {
  describe(`${name} storage`, () => {
    test('stores, replaces and deletes a blob', async () => {
      const s = await make()
      const key = 'recordings/acc_1/rec_1.wav'
      expect(await s.get(key)).toBeUndefined()
      await s.put(key, new Uint8Array([1, 2, 3]), 'audio/wav')
      const got = await s.get(key)
      expect(got?.contentType).toBe('audio/wav')
      expect([...got!.bytes]).toEqual([1, 2, 3])
      await s.put(key, new Uint8Array([9]), 'application/octet-stream')
      const replaced = await s.get(key)
      expect([...replaced!.bytes]).toEqual([9])
      expect(replaced!.contentType).toBe('application/octet-stream')
      await s.delete(key)
      expect(await s.get(key)).toBeUndefined()
      await s.delete(key) // deleting again is fine: deletes are retried
    })

    test('a stored blob does not change when the caller reuses its buffer', async () => {
      const s = await make()
      const buf = new Uint8Array([5, 5])
      await s.put('k', buf, 'x/y')
      buf[0] = 0
      const got = await s.get('k')
      expect([...got!.bytes]).toEqual([5, 5])
      got!.bytes[1] = 0
      expect([...(await s.get('k'))!.bytes]).toEqual([5, 5])
    })

    test('refuses keys that are not safe relative paths', async () => {
      const s = await make()
      for (const bad of ['', '../x', 'a/../../x', '/etc/passwd', 'a//b', 'a/', '.meta/x', '.hidden', 'a\\b', 'a/./b', 'sp ace', 'x'.repeat(600)]) {
        await expect(s.put(bad, new Uint8Array(1), 'x/y')).rejects.toBeInstanceOf(InvalidBlobKeyError)
        await expect(s.get(bad)).rejects.toBeInstanceOf(InvalidBlobKeyError)
        await expect(s.delete(bad)).rejects.toBeInstanceOf(InvalidBlobKeyError)
      }
    })
  })
}

describe('disk storage', () => {
  test('writes the blob as a plain file under the folder and leaves no temp files', async () => {
    const root = await tempDir()
    const s = diskStorage(join(root, 'blobs'))
    await s.put('voicemails/vm_1.wav', new Uint8Array([7, 8]), 'audio/wav')
    expect([...(await readFile(join(root, 'blobs', 'voicemails', 'vm_1.wav')))]).toEqual([7, 8])
    expect(await readdir(join(root, 'blobs', '.tmp'))).toEqual([])
  })

  test('concurrent writers of one key leave one whole blob, not a mix', async () => {
    const s = diskStorage(join(await tempDir(), 'blobs'))
    const blobs = Array.from({ length: 8 }, (_, i) => new Uint8Array(200_000).fill(i + 1))
    await Promise.all(blobs.map((b) => s.put('same', b, 'x/y')))
    const got = (await s.get('same'))!.bytes
    expect(got.length).toBe(200_000)
    expect(got.every((v) => v === got[0])).toBe(true)
  })

  test('a file without metadata is served as opaque bytes', async () => {
    const root = await tempDir()
    const s = diskStorage(root)
    await Bun.write(join(root, 'hand-copied.bin'), new Uint8Array([1]))
    expect((await s.get('hand-copied.bin'))?.contentType).toBe('application/octet-stream')
  })
})

describe('createStorage', () => {
  test('memory:// keeps blobs in memory; a folder keeps them under blobs/', async () => {
    const mem = createStorage({ dataDir: 'memory://' })
    await mem.put('a', new Uint8Array([1]), 'x/y')
    expect((await mem.get('a'))?.bytes.length).toBe(1)

    const root = await tempDir()
    const disk = createStorage({ dataDir: root })
    await disk.put('a', new Uint8Array([2]), 'x/y')
    expect([...(await readFile(join(root, 'blobs', 'a')))]).toEqual([2])
  })
})
