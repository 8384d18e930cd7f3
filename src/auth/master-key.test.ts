import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ConfigError } from '../config'
import { createKeyRing, MasterKey, parseMasterKey } from './key-encryption'
import { holdKeyRing, KEY_FILE_NAME, keyRingInUse, openSecret, resolveKeyRing } from './master-key'

const root = mkdtempSync(join(tmpdir(), 'voice-master-key-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const lines: string[] = []
const log = { info: (_: object, msg: string) => void lines.push(msg), warn: (_: object, msg: string) => void lines.push(`warn: ${msg}`) }
const settings = (over: Record<string, unknown>) => ({
  masterKey: undefined,
  masterKeyPrevious: undefined,
  dataDir: 'memory://',
  databaseUrl: undefined,
  ...over,
})

describe('where the master key comes from', () => {
  test('VOICE_MASTER_KEY, with VOICE_MASTER_KEY_PREVIOUS beside it', () => {
    const [current, previous] = [MasterKey.generate(), MasterKey.generate()]
    const { ring, source } = resolveKeyRing(settings({ masterKey: current, masterKeyPrevious: previous }), log)
    expect([ring.current.id, ring.previous?.id, source]).toEqual([current.id, previous.id, 'VOICE_MASTER_KEY'])
  })

  test('DATA_DIR=memory:// without DATABASE_URL: one key for the whole process', () => {
    const one = resolveKeyRing(settings({}), log).ring.current.id
    expect(resolveKeyRing(settings({}), log).ring.current.id).toBe(one)
  })

  test('a data folder: master.key made once (0600, in base64), then read by every later start', () => {
    const dataDir = join(root, 'data')
    const rings = Array.from({ length: 5 }, () => resolveKeyRing(settings({ dataDir }), log).ring)
    expect(new Set(rings.map((r) => r.current.id)).size).toBe(1)
    const file = join(dataDir, KEY_FILE_NAME)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(parseMasterKey(readFileSync(file, 'utf8'))?.id).toBe(rings[0]!.current.id)
    expect(lines.filter((l) => l.startsWith('made the master key'))).toHaveLength(1)
  })

  test('with DATABASE_URL and no key, the key file is used with a warning', () => {
    const dataDir = join(root, 'shared')
    lines.length = 0
    resolveKeyRing(settings({ dataDir, databaseUrl: 'postgres://db/voice' }), log)
    expect(lines.some((l) => l.startsWith('warn: VOICE_MASTER_KEY is not set'))).toBe(true)
  })

  test('a key file that holds no key stops the start, without quoting it', () => {
    const dataDir = join(root, 'broken')
    resolveKeyRing(settings({ dataDir }), log)
    writeFileSync(join(dataDir, KEY_FILE_NAME), 'not-a-key-but-secret-text\n')
    expect(() => resolveKeyRing(settings({ dataDir }), log)).toThrow(ConfigError)
    expect(() => resolveKeyRing(settings({ dataDir }), log)).not.toThrow(/secret-text/)
  })
})

describe('the process key ring', () => {
  test('services of one process share one master key; a second key is refused until the first is released', () => {
    const [one, two] = [createKeyRing(MasterKey.generate()), createKeyRing(MasterKey.generate())]
    const release = holdKeyRing(one)
    const again = holdKeyRing(one)
    expect(() => holdKeyRing(two)).toThrow(ConfigError)
    release()
    expect(keyRingInUse()).toBe(one)
    again()
    expect(() => keyRingInUse()).toThrow(/no master key is loaded/)
    holdKeyRing(two)()
  })

  test('openSecret returns text that was never sealed as it is (rows from before sealing)', () => {
    expect(openSecret('whsec_plain', 'webhook_endpoints.secret:we_1')).toBe('whsec_plain')
  })
})
