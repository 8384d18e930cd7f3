/**
 * Download URLs grant exactly one blob until they expire: any change to the token,
 * another server's secret, or the injected clock passing the expiry refuses it with
 * a reason the route can map to a status.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHmac } from 'node:crypto'
import fc from 'fast-check'
import { TEST_MASTER_KEY } from '../../test/support/service'
import { createKeyRing, parseMasterKey } from '../auth/key-encryption'
import { sweepSealedValues } from '../auth/sealed-columns'
import { manualClock } from '../clock'
import { openDatabase, type Database } from '../db/client'
import { DEFAULT_DOWNLOAD_TTL_MS, DOWNLOAD_PATH_PREFIX, loadDownloadSigningKey, signDownload, verifyDownload, type DownloadGrant } from './download-urls'

const secret = 'test-secret-0123456789abcdef'
const clock = manualClock('2026-03-01T10:00:00.000Z')
const grant = (): DownloadGrant => ({
  key: 'recordings/acc_1/rec_1.wav',
  contentType: 'audio/wav',
  expiresAt: new Date(clock.now().getTime() + DEFAULT_DOWNLOAD_TTL_MS),
})

describe('signed download URLs', () => {
  test('a fresh URL verifies to its key and content type', () => {
    const g = grant()
    const url = signDownload(secret, g)
    expect(url.startsWith(DOWNLOAD_PATH_PREFIX)).toBe(true)
    const token = url.slice(DOWNLOAD_PATH_PREFIX.length)
    expect(token).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/)
    for (const form of [url, token, `https://voice.example${url}`, `${url}?x=1`]) {
      expect(verifyDownload(secret, form, clock.now())).toEqual({ ok: true, grant: g })
    }
  })

  test('expires by the injected clock, to the millisecond', () => {
    const t = manualClock('2026-03-01T10:00:00.000Z')
    const url = signDownload(secret, { key: 'k', contentType: 'audio/wav', expiresAt: new Date(t.now().getTime() + 1000) })
    t.advance(999)
    expect(verifyDownload(secret, url, t.now()).ok).toBe(true)
    t.advance(1)
    expect(verifyDownload(secret, url, t.now())).toEqual({ ok: false, reason: 'expired' })
  })

  test('another secret does not verify it', () => {
    const url = signDownload(secret, grant())
    expect(verifyDownload('another-secret-0123456789', url, clock.now())).toEqual({ ok: false, reason: 'bad_signature' })
    expect(verifyDownload(new TextEncoder().encode(secret), url, clock.now()).ok).toBe(true)
  })

  test('a forged payload (other key, later expiry) is refused', () => {
    const url = signDownload(secret, grant())
    const [body, sig] = url.slice(DOWNLOAD_PATH_PREFIX.length).split('.') as [string, string]
    const payload = JSON.parse(Buffer.from(body, 'base64url').toString())
    for (const change of [{ k: 'recordings/acc_2/rec_9.wav' }, { e: payload.e + 86_400_000 }, { t: 'text/html' }]) {
      const forged = Buffer.from(JSON.stringify({ ...payload, ...change })).toString('base64url')
      expect(verifyDownload(secret, `${forged}.${sig}`, clock.now())).toEqual({ ok: false, reason: 'bad_signature' })
    }
    // an expired forgery is still reported as forged: the signature is checked first
    clock.advance(2 * DEFAULT_DOWNLOAD_TTL_MS)
    const forged = Buffer.from(JSON.stringify({ ...payload, k: 'x' })).toString('base64url')
    expect(verifyDownload(secret, `${forged}.${sig}`, clock.now())).toEqual({ ok: false, reason: 'bad_signature' })
    clock.set('2026-03-01T10:00:00.000Z')
  })

  test('any single-character change to the token is refused', () => {
    const token = signDownload(secret, grant()).slice(DOWNLOAD_PATH_PREFIX.length)
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.'
    fc.assert(
      fc.property(fc.nat(token.length - 1), fc.constantFrom(...alphabet), (i, c) => {
        fc.pre(token[i] !== c)
        const tampered = token.slice(0, i) + c + token.slice(i + 1)
        // including changes to base64url padding bits that decode to the same bytes
        expect(verifyDownload(secret, tampered, clock.now()).ok).toBe(false)
      }),
      { numRuns: 500 },
    )
  })

  test('malformed tokens are named as such', () => {
    for (const bad of ['', 'abc', 'a.b.c', 'not base64!.abc', `${DOWNLOAD_PATH_PREFIX}`, '.', 'abc.']) {
      expect(verifyDownload(secret, bad, clock.now())).toEqual({ ok: false, reason: 'malformed' })
    }
    // well signed but not our payload shape (a MAC made with the same secret and context)
    const body = Buffer.from(JSON.stringify({ k: 1 })).toString('base64url')
    const sig = createHmac('sha256', secret).update(`voice.download.v1.${body}`).digest('base64url')
    expect(verifyDownload(secret, `${body}.${sig}`, clock.now())).toEqual({ ok: false, reason: 'malformed' })
  })
})

describe('download signing key', () => {
  let database: Database
  // On DATABASE_URL this is the shared database `test`: its key is the test services' key.
  const ring = createKeyRing(parseMasterKey(TEST_MASTER_KEY)!)
  beforeAll(async () => {
    database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: 'memory://' })
    await database.migrate()
    await sweepSealedValues(database.db, ring, 'the test key')
  })
  afterAll(async () => {
    await database.close()
  })

  test('is made once and then the same for every caller', async () => {
    const [a, b] = await Promise.all([loadDownloadSigningKey(database.db, ring), loadDownloadSigningKey(database.db, ring)])
    expect(a).toBe(b)
    expect(a.length).toBeGreaterThanOrEqual(32)
    expect(await loadDownloadSigningKey(database.db, ring)).toBe(a)
  })
})
