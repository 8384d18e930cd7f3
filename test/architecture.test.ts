/**
 * The folder rules of ARCHITECTURE.md ("Folders and what may import what"), checked
 * on every import of every source file rather than by review, and no import cycle
 * between modules at run time.
 *
 *   machines/  xstate only (and each other)
 *   actors/    machines/, src/
 *   gateway/   src/, and of actors/ the client side only: actors/client.ts; no
 *              table or query of its own (no drizzle-orm, no src/db/schema): routes
 *              read and write through src/ services
 *   media/     src/
 *   src/       nothing above it; the composition root (COMPOSITION_ROOT) alone
 *              imports the roles above src/ to start them
 *   test/      anything; so may a unit or property test beside its module (*.test.ts)
 */
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { Glob } from 'bun'

const ROOT = join(import.meta.dir, '..')
const FOLDERS = ['machines', 'actors', 'gateway', 'media', 'src'] as const
type Folder = (typeof FOLDERS)[number]

/** The one exception to "src/ imports nothing above it": the modules that compose the roles into a process. */
export const COMPOSITION_ROOT = new Set(['src/server.ts', 'src/main.ts'])
/** What gateways may use of actors/: the client side (reading state, durable commands and spawns), never the runtime. */
export const ACTORS_CLIENT_SIDE = new Set(['actors/client.ts'])

const allowedFolders: Record<Folder, readonly Folder[]> = {
  machines: ['machines'],
  actors: ['actors', 'machines', 'src'],
  gateway: ['gateway', 'src', 'actors'],
  media: ['media', 'src'],
  src: ['src'],
}
/** Packages a folder may import beyond its own code; absent: any package. */
const allowedPackages: Partial<Record<Folder, (pkg: string) => boolean>> = {
  machines: (pkg) => pkg === 'xstate',
  gateway: (pkg) => pkg !== 'drizzle-orm',
}
/** Modules a folder may not import although its folder rule would allow them. */
const forbiddenModules: Partial<Record<Folder, (target: string) => boolean>> = {
  gateway: (target) => target.startsWith('src/db/schema'),
}

const sources = [...new Glob('{machines,actors,gateway,media,src}/**/*.ts').scanSync(ROOT)].map((f) => f.split('\\').join('/')).sort()
const isTest = (file: string) => file.endsWith('.test.ts') || file.includes('/test-fixtures')

/** Every import of a file, type-only ones included (a type import still couples the layers). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8')
  const found = new Set<string>()
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]/g)) found.add(m[1]!)
  for (const m of text.matchAll(/(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g)) found.add(m[1]!)
  for (const m of text.matchAll(/\bimport\(\s*['"]([^'"]+)['"]\s*\)/g)) found.add(m[1]!)
  return [...found]
}

/** A relative import as a repository path (with .ts); undefined for a package. */
function resolve(from: string, spec: string): string | undefined {
  if (!spec.startsWith('.')) return undefined
  const base = normalize(join(dirname(from), spec))
    .split('\\')
    .join('/')
  for (const candidate of [`${base}.ts`, `${base}/index.ts`, base]) if (sources.includes(candidate) || candidate.endsWith('.json')) return candidate
  return `${base}.ts`
}

const folderOf = (file: string) => file.split('/')[0] as Folder | 'test'

/** The folder rules broken by one file's imports. */
function checkFile(file: string, imports: string[]): string[] {
  const out: string[] = []
  const folder = folderOf(file) as Folder
  for (const spec of imports) {
    const target = resolve(file, spec)
    if (target === undefined) {
      const pkg = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]!
      const ok = allowedPackages[folder]
      if (ok && !ok(pkg))
        out.push(`${file} imports ${spec}: ${folder === 'machines' ? 'machines/ may import xstate only' : `${folder}/ may not import ${pkg}`}`)
      continue
    }
    const targetFolder = folderOf(target)
    if (targetFolder === 'test') {
      out.push(`${file} imports ${target}: only tests import test/`)
      continue
    }
    if (!(FOLDERS as readonly string[]).includes(targetFolder)) continue // package.json and the like
    if (COMPOSITION_ROOT.has(file)) continue
    if (!allowedFolders[folder].includes(targetFolder as Folder)) out.push(`${file} imports ${target}: ${folder}/ may not import ${targetFolder}/`)
    else if (forbiddenModules[folder]?.(target)) out.push(`${file} imports ${target}: ${folder}/ reads and writes through src/ services`)
    else if (folder === 'gateway' && targetFolder === 'actors' && !ACTORS_CLIENT_SIDE.has(target))
      out.push(`${file} imports ${target}: gateway/ may use actors/ only through ${[...ACTORS_CLIENT_SIDE].join(', ')}`)
  }
  return out
}

const violations = () => sources.filter((f) => !isTest(f)).flatMap((f) => checkFile(f, importsOf(f)))

/** The run-time import graph (type-only imports are erased and do not count), and its cycles. */
function cycles(): string[][] {
  const transpiler = new Bun.Transpiler({ loader: 'ts' })
  const graph = new Map<string, string[]>()
  for (const file of sources) {
    if (isTest(file)) continue
    const deps = transpiler
      .scanImports(readFileSync(join(ROOT, file), 'utf8'))
      .map((i) => resolve(file, i.path))
      .filter((t): t is string => t !== undefined && sources.includes(t))
    graph.set(file, deps)
  }
  const found: string[][] = []
  const state = new Map<string, 'open' | 'done'>()
  const stack: string[] = []
  const visit = (f: string) => {
    state.set(f, 'open')
    stack.push(f)
    for (const d of graph.get(f) ?? []) {
      if (state.get(d) === 'open') found.push([...stack.slice(stack.indexOf(d)), d])
      else if (!state.has(d)) visit(d)
    }
    stack.pop()
    state.set(f, 'done')
  }
  for (const f of graph.keys()) if (!state.has(f)) visit(f)
  return found
}

describe('ARCHITECTURE.md: folders and what may import what', () => {
  test('the checker sees the source tree', () => {
    expect(sources.length).toBeGreaterThan(50)
    for (const f of [...COMPOSITION_ROOT, ...ACTORS_CLIENT_SIDE]) expect(sources).toContain(f)
  })

  test('every import follows the folder rules', () => {
    expect(violations()).toEqual([])
  })

  test('no import cycle between modules at run time', () => {
    expect(cycles().map((c) => c.join(' → '))).toEqual([])
  })

  test('the checker catches breaches', () => {
    expect(checkFile('src/services/accounts/users.ts', ['../../../gateway/app'])).toEqual([
      'src/services/accounts/users.ts imports gateway/app.ts: src/ may not import gateway/',
    ])
    expect(checkFile('gateway/routes/calls.ts', ['../../actors/runtime/host'])).toEqual([
      'gateway/routes/calls.ts imports actors/runtime/host.ts: gateway/ may use actors/ only through actors/client.ts',
    ])
    expect(checkFile('machines/call.ts', ['drizzle-orm', 'xstate'])).toEqual(['machines/call.ts imports drizzle-orm: machines/ may import xstate only'])
    expect(checkFile('media/wav.ts', ['../actors/client'])).toEqual(['media/wav.ts imports actors/client.ts: media/ may not import actors/'])
    expect(checkFile('src/server.ts', ['../gateway/app', '../actors/workers'])).toEqual([])
    expect(checkFile('gateway/routes/users.ts', ['drizzle-orm', '../../src/db/schema'])).toEqual([
      'gateway/routes/users.ts imports drizzle-orm: gateway/ may not import drizzle-orm',
      'gateway/routes/users.ts imports src/db/schema/index.ts: gateway/ reads and writes through src/ services',
    ])
  })
})
