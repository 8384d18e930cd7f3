/**
 * Micro-benchmark of header parsing, µs per parse, for From, To, Contact and the
 * Request-URI of distinct phones (every value new, as when many lines register):
 *
 *   grammar   sip.js's Grammar.parse (what a cache miss cost before fast-headers.ts)
 *   cached    a hit of message.ts's cache: Map lookup, LRU move, clone()
 *   fast      fastParse(value, rule, true), what message.ts now does for these shapes
 *
 * Run: bun media/sip/fast-headers.bench.ts [iterations]. No assertion: numbers only.
 */
import { Grammar } from 'sip.js/lib/grammar/grammar.js'
import { fastParse } from './fast-headers'

const n = Number(process.argv[2] ?? 2_000)
const shapes: Array<[string, (i: number) => string]> = [
  ['From', (i) => `"Line ${i}" <sip:${1000 + i}@pbx.example.com>`],
  ['To', (i) => `<sip:${1000 + i}@pbx.example.com>`],
  [
    'Contact',
    (i) =>
      `<sip:${1000 + i}@10.1.${(i >> 8) & 255}.${i & 255}:5060;transport=udp>;+sip.instance="<urn:uuid:00000000-0000-1000-8000-${String(i).padStart(12, '0')}>";reg-id=1;expires=3600`,
  ],
  ['SIP_URI', (i) => `sip:${1000 + i}@pbx.example.com;user=phone`],
]

function time(f: (i: number) => unknown, count: number): number {
  for (let i = 0; i < Math.min(count, 200); i++) f(i) // warm-up
  const t0 = performance.now()
  for (let i = 0; i < count; i++) f(i)
  return ((performance.now() - t0) * 1000) / count
}

const clone = (x: unknown): unknown => (Array.isArray(x) ? x.map((e) => ({ ...e, parsed: e.parsed.clone() })) : (x as { clone(): unknown }).clone())

console.log(`µs per parse, ${n} distinct values per rule`)
console.log('rule        grammar    cached      fast')
for (const [rule, make] of shapes) {
  const values = Array.from({ length: n }, (_, i) => make(i))
  const cache = new Map<string, unknown>()
  for (const v of values) cache.set(`${rule}\n${v}`, Grammar.parse(v, rule))
  const grammarCount = Math.min(n, 500) // 0.3 ms each
  const g = time((i) => Grammar.parse(values[i]!, rule), grammarCount)
  const c = time((i) => {
    const key = `${rule}\n${values[i]!}`
    const hit = cache.get(key)
    cache.delete(key)
    cache.set(key, hit)
    return clone(hit)
  }, n)
  const f = time((i) => fastParse(values[i]!, rule, true), n)
  if (fastParse(values[0]!, rule) === undefined) throw new Error(`${rule}: not on the fast path`)
  console.log(`${rule.padEnd(10)} ${g.toFixed(1).padStart(8)} ${c.toFixed(2).padStart(9)} ${f.toFixed(2).padStart(9)}`)
}
