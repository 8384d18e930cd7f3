/**
 * The spec's operation list, as "METHOD /v1/path" lines. The spec lives outside this
 * repository (../shared/spec/voice-api-spec.md, beside the checkout); its list is kept
 * here (test/fixtures/spec-operations.txt) so that the x-extension check runs in any
 * clone, and the copy is held to the spec wherever the spec is at hand.
 */
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

const ROOT = join(import.meta.dir, '..', '..')
export const SPEC_FILE = join(ROOT, '..', 'shared', 'spec', 'voice-api-spec.md')
export const SPEC_OPERATIONS_FILE = join(ROOT, 'test', 'fixtures', 'spec-operations.txt')

/** The kept copy of the list. */
export function keptSpecOperations(): Set<string> {
  return new Set(
    readFileSync(SPEC_OPERATIONS_FILE, 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#')),
  )
}

/** The list read from the spec itself, or undefined where the spec is not beside the checkout. */
export function specOperationsAtHand(): Set<string> | undefined {
  return existsSync(SPEC_FILE) ? specOperations(readFileSync(SPEC_FILE, 'utf8')) : undefined
}

/** The text of the kept copy, from the spec's list. */
export function specOperationsText(ops: Set<string>): string {
  return `# The operations of ../shared/spec/voice-api-spec.md (## Endpoints), one per line.\n# Written by: bun test/support/spec-operations.ts\n${[...ops].sort().join('\n')}\n`
}

/** Every operation of the spec's Endpoints section, as "METHOD /v1/path" (see the parsing notes inside). */
export function specOperations(text: string): Set<string> {
  const start = text.indexOf('\n## Endpoints')
  const section = text.slice(start, text.indexOf('\n## ', start + 1))
  const METHOD = '(?:GET|POST|PUT|PATCH|DELETE)'
  // "GET /v1/x", "GET, POST, DELETE /v1/x/{id}", "GET (limit), POST /v1/x",
  // "POST .../approve" (under the last full path), "POST" alone (the last full path).
  const item = new RegExp(`\\b(${METHOD}(?:\\s*\\([^)]*\\))?(?:\\s*(?:,|and)\\s*${METHOD}(?:\\s*\\([^)]*\\))?)*)(?:\\s+(\\/v1\\/\\S+|\\.\\.\\.\\/\\S+))?`, 'g')
  const ops = new Set<string>()
  let last = ''
  for (const line of section.split('\n').filter((l) => l.startsWith('- '))) {
    for (const clause of line.slice(2).split(/;\s*/)) {
      for (const m of clause.matchAll(item)) {
        const token = (m[2] ?? '').replace(/[.,:]$/, '')
        let path = last
        if (token.startsWith('/v1/')) path = last = token
        else if (token.startsWith('.../')) {
          const rest = token.slice(4).split('/')
          const segments = last.split('/')
          const at = segments.indexOf(rest[0]!)
          path = (at >= 0 ? [...segments.slice(0, at), ...rest] : [...segments, ...rest]).join('/')
        }
        for (const method of m[1]!.replace(/\([^)]*\)/g, '').match(new RegExp(METHOD, 'g'))!) ops.add(`${method} ${path}`)
      }
    }
  }
  return ops
}

if (import.meta.main) {
  const ops = specOperationsAtHand()
  if (!ops) throw new Error(`${SPEC_FILE} is not here`)
  await Bun.write(SPEC_OPERATIONS_FILE, specOperationsText(ops))
  console.log(`wrote ${ops.size} operations to ${SPEC_OPERATIONS_FILE}`)
}
