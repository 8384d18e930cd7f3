import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { createKeyRing, isSealed, MasterKey, parseMasterKey, SealedValueError, sealedKeyId } from './key-encryption'

const a = new MasterKey(Buffer.alloc(32, 1))
const b = new MasterKey(Buffer.alloc(32, 2))

describe('sealed values', () => {
  test('round trip: any text opens to itself under the key and context it was sealed with', () => {
    const ring = createKeyRing(a)
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string(), (plain, context) => {
        const sealed = ring.seal(plain, context)
        expect(isSealed(sealed)).toBe(true)
        expect(sealedKeyId(sealed)).toBe(a.id)
        expect(ring.open(sealed, context)).toBe(plain)
      }),
    )
  })

  test('the sealed text reveals neither the value nor its length exactly, and differs every time', () => {
    const ring = createKeyRing(a)
    const secret = 'whsec_0123456789abcdefghijklmnop'
    const one = ring.seal(secret, 'ctx')
    const two = ring.seal(secret, 'ctx')
    expect(one).not.toBe(two)
    expect(one).not.toContain(secret)
    expect(one).not.toContain(Buffer.from(secret).toString('base64url'))
  })

  test('another master key is refused with a message naming both keys by id, never their bytes', () => {
    const sealed = createKeyRing(a).seal('secret', 'settings.value:cursor_key')
    let error: unknown
    try {
      createKeyRing(b).open(sealed, 'settings.value:cursor_key')
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(SealedValueError)
    const message = (error as Error).message
    expect(message).toContain(`master key ${a.id}`)
    expect(message).toContain(b.id)
    for (const key of [a, b]) expect(message).not.toContain(key.toKeyFileText())
  })

  test('during a rotation the previous key opens old values; new values are sealed under the current key', () => {
    const old = createKeyRing(a).seal('kept', 'ctx')
    const rotating = createKeyRing(b, a)
    expect(rotating.open(old, 'ctx')).toBe('kept')
    const fresh = rotating.seal('new', 'ctx')
    expect(sealedKeyId(fresh)).toBe(b.id)
    expect(() => createKeyRing(a).open(fresh, 'ctx')).toThrow(SealedValueError)
  })

  test('tampering is detected: any changed character, or a value moved to another context', () => {
    const ring = createKeyRing(a)
    const sealed = ring.seal('the session signing key', 'settings.value:session_jwt_key')
    const body = sealed.lastIndexOf('.') + 1
    for (let i = body; i < sealed.length; i += 7) {
      const c = sealed[i] === 'A' ? 'B' : 'A'
      const altered = sealed.slice(0, i) + c + sealed.slice(i + 1)
      expect(() => ring.open(altered, 'settings.value:session_jwt_key')).toThrow(SealedValueError)
    }
    expect(() => ring.open(sealed, 'webhook_endpoints.secret:we_1')).toThrow(/integrity check/)
    expect(() => ring.open(sealed.slice(0, body + 10), 'settings.value:session_jwt_key')).toThrow(SealedValueError)
    expect(() => ring.open('whsec_plain', 'ctx')).toThrow(/not a sealed value/)
  })
})

describe('master keys', () => {
  test('written as 64 hex digits or base64 (either alphabet, padding optional); anything else is refused', () => {
    const key = MasterKey.generate()
    const text = key.toKeyFileText()
    const bytes = Buffer.from(text, 'base64')
    for (const form of [text, text.replace(/=$/, ''), bytes.toString('base64url'), bytes.toString('hex'), bytes.toString('hex').toUpperCase(), ` ${text}\n`]) {
      expect(parseMasterKey(form)?.id).toBe(key.id)
    }
    for (const bad of ['', 'short', bytes.subarray(0, 31).toString('base64'), Buffer.concat([bytes, bytes]).toString('base64'), `${bytes.toString('hex')}00`]) {
      expect(parseMasterKey(bad)).toBeUndefined()
    }
  })

  test('a key shows only its id when logged or serialised', () => {
    const key = MasterKey.generate()
    expect(JSON.stringify({ key })).toBe(`{"key":"[master key ${key.id}]"}`)
    expect(Bun.inspect(key)).not.toContain(key.toKeyFileText())
    expect(key.id).toMatch(/^[0-9a-f]{8}$/)
    expect(new MasterKey(Buffer.from(key.toKeyFileText(), 'base64')).id).toBe(key.id)
  })
})
