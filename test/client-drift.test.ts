/**
 * The committed typed client cannot drift from the service: the types in
 * client/schema.d.ts are regenerated in memory from the document a started
 * service serves, exactly as `npm run client:generate` writes them, and must be
 * the committed file byte for byte.
 */
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { SCHEMA_FILE, typesOf } from '../client/generate'
import { startTestService } from './support/service'

const t = await startTestService()

test('client/schema.d.ts is what the served OpenAPI document generates (else: npm run client:generate)', async () => {
  const doc = (await (await fetch(`${t.baseUrl}/v1/openapi.json`)).json()) as object
  const generated = await typesOf(doc)
  const committed = readFileSync(SCHEMA_FILE, 'utf8')
  if (generated !== committed) {
    const a = generated.split('\n')
    const b = committed.split('\n')
    const at = a.findIndex((line, i) => line !== b[i])
    throw new Error(
      `client/schema.d.ts differs from the served document's types from line ${at + 1}:\n  generated: ${a[at]}\n  committed: ${b[at]}\nRun npm run client:generate.`,
    )
  }
  expect(generated).toBe(committed)
}, 120_000)
