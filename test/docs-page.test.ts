/**
 * `GET /docs`: an HTML API reference rendered from the served OpenAPI document, from
 * a kept package (Scalar's standalone bundle, served by the service), working
 * offline, and linked from `/`.
 *
 * Over HTTP always: the page, the bundle and the index, and that the page names
 * nothing outside the service. In headless Chromium when one is installed: the page
 * loads with every host but 127.0.0.1 unresolvable, every request it makes goes to
 * the service, and the rendered DOM lists every operation of the document; the
 * screenshot is written to a temporary folder, never into the repository.
 */
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type CdpEvent, findChromium, HeadlessChromium } from './support/headless-chromium'
import { startTestService } from './support/service'

const t = await startTestService()
const doc: any = await (await fetch(`${t.baseUrl}/v1/openapi.json`)).json()
const METHODS = new Set(['get', 'post', 'put', 'patch', 'delete'])
const operations: { method: string; path: string; operationId: string; summary: string }[] = Object.entries(
  doc.paths as Record<string, Record<string, any>>,
).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => METHODS.has(method))
    .map(([method, op]) => ({ method, path, operationId: op.operationId, summary: op.summary })),
)

/** The URLs an HTML page makes the browser load or offers to follow. */
const urlsIn = (html: string) => [...html.matchAll(/\b(?:src|href|action)\s*=\s*["']([^"']*)["']/gi)].map((m) => m[1]!)
/** A URL that stays on the page's own origin: a path, not `//host` or `scheme:`; or inline data, which is no request at all. */
const sameOrigin = (url: string) => (url.startsWith('/') && !url.startsWith('//')) || url.startsWith('data:')

const chromium = findChromium()
if (!chromium) console.log('[docs-page] browser check skipped: no chromium on PATH (Debian: apt-get install chromium)')

describe('GET /docs, over HTTP', () => {
  test('answers an HTML page that loads Scalar and its configuration from the service only', async () => {
    const res = await fetch(`${t.baseUrl}/docs`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(res.headers.get('x-request-id')).toMatch(/^req_/)
    const html = await res.text()
    const urls = urlsIn(html)
    expect(urls.some((u) => u.startsWith('/docs/scalar.js'))).toBe(true)
    expect(urls.filter((u) => !sameOrigin(u))).toEqual([])
    // No inline script: everything runs from the service's own files, which the policy enforces.
    expect(html.match(/<script(?![^>]*\bsrc=)[^>]*>/gi) ?? []).toEqual([])
    const csp = res.headers.get('content-security-policy') ?? ''
    expect(csp).toContain("default-src 'self'")
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain("connect-src 'self'")
  })

  test("the page's scripts answer with a JavaScript type: the bundle is the installed package's, cacheable for a year", async () => {
    const html = await (await fetch(`${t.baseUrl}/docs`)).text()
    const scripts = urlsIn(html).filter((u) => /\.js(\?|$)/.test(u))
    expect(scripts.length).toBe(2)
    const installed = readFileSync(fileURLToPath(import.meta.resolve('@scalar/api-reference/browser/standalone.js')))
    for (const src of scripts) {
      const res = await fetch(t.baseUrl + src)
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
      expect(res.headers.get('x-request-id')).toMatch(/^req_/)
      const body = new Uint8Array(await res.arrayBuffer())
      if (src.startsWith('/docs/scalar.js')) {
        expect(Buffer.from(body).equals(installed)).toBe(true)
        expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
      } else {
        const init = new TextDecoder().decode(body)
        expect(init).toContain('"url":"/v1/openapi.json"')
        expect(init).toContain('"withDefaultFonts":false')
        expect(init).toContain('"telemetry":false')
        // No host of any kind in the configuration: Scalar is never sent elsewhere.
        expect(init).not.toMatch(/https?:|\/\//)
      }
    }
  })

  test('is not an operation of the OpenAPI document (it is not part of /v1)', () => {
    expect(Object.keys(doc.paths).filter((p) => !p.startsWith('/v1/'))).toEqual([])
    expect(operations.length).toBeGreaterThan(100)
  })

  test('GET / is an index linking /docs, the OpenAPI document and /healthz, each of which answers', async () => {
    const res = await fetch(`${t.baseUrl}/`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const urls = urlsIn(await res.text())
    expect(urls).toEqual(expect.arrayContaining(['/docs', '/v1/openapi.json', '/healthz']))
    expect(urls.filter((u) => !sameOrigin(u))).toEqual([])
    for (const u of urls.filter((u) => u.startsWith('/'))) expect((await fetch(t.baseUrl + u)).status).toBe(200)
  })
})

describe('GET /docs, in headless Chromium', () => {
  let browser: HeadlessChromium | undefined
  afterAll(() => browser?.close())

  test.skipIf(!chromium)(
    'loads offline, requests nothing but the service, and lists every operation of the OpenAPI document',
    async () => {
      browser = await HeadlessChromium.launch(chromium!)
      const b = browser
      const origin = new URL(t.baseUrl).origin
      const requests: string[] = []
      const failed: string[] = []
      const problems: string[] = []
      b.onEvent((e: CdpEvent) => {
        if (e.method === 'Network.requestWillBeSent') requests.push(e.params.request.url)
        else if (e.method === 'Network.loadingFailed') failed.push(`${e.params.errorText} ${e.params.blockedReason ?? ''}`.trim())
        else if (e.method === 'Runtime.exceptionThrown') problems.push(e.params.exceptionDetails?.exception?.description ?? e.params.exceptionDetails?.text)
        else if (e.method === 'Log.entryAdded' && e.params.entry.level === 'error') problems.push(`${e.params.entry.source}: ${e.params.entry.text}`)
      })
      const { sessionId } = await b.newPage((s) =>
        Promise.all([b.send('Network.enable', {}, s), b.send('Runtime.enable', {}, s), b.send('Log.enable', {}, s).catch(() => {})]),
      )
      await b.send('Page.enable', {}, sessionId)
      const loaded = b.nextEvent('Page.loadEventFired', 60_000, (e) => e.sessionId === sessionId)
      const nav = await b.send('Page.navigate', { url: `${origin}/docs` }, sessionId)
      expect(nav.errorText).toBeUndefined()
      await loaded

      // Scalar renders after it has fetched and parsed the document; each tag's section
      // then lists its operations as links (a.endpoint: method, path). Wait (bounded, in the
      // page) until the rendered reference lists every operation of the document, then say
      // which did not appear.
      const wanted = operations.map((o) => `${o.method} ${o.path}`)
      const { result, exceptionDetails } = await b.send(
        'Runtime.evaluate',
        {
          awaitPromise: true,
          returnByValue: true,
          expression: `new Promise((resolve) => {
            const wanted = ${JSON.stringify(wanted)}
            const deadline = performance.now() + 90000
            const missing = () => {
              const listed = new Set([...document.querySelectorAll('main a.endpoint')].map((a) =>
                [a.querySelector('.endpoint-method')?.textContent.trim().toLowerCase(), a.querySelector('.endpoint-path')?.textContent.trim()].join(' ')))
              const title = document.querySelector('main h1')?.textContent ?? ''
              return [...(title.includes(${JSON.stringify(doc.info.title)}) ? [] : ['the title']), ...wanted.filter((w) => !listed.has(w))]
            }
            const check = () => {
              const m = missing()
              if (m.length === 0 || performance.now() > deadline) resolve(m)
              else setTimeout(check, 250)
            }
            check()
          })`,
        },
        sessionId,
      )
      expect(exceptionDetails).toBeUndefined()
      expect(result.value).toEqual([])

      const shot = await b.send('Page.captureScreenshot', { format: 'png' }, sessionId)
      const dir = mkdtempSync(join(tmpdir(), 'voice-docs-screenshot-'))
      const file = join(dir, 'docs.png')
      writeFileSync(file, Buffer.from(shot.data, 'base64'))
      console.log(`[docs-page] screenshot of /docs: ${file}`)

      // Only the service was asked for anything (data: URLs are the page's own bytes, not requests).
      const network = requests.filter((u) => !u.startsWith('data:') && !u.startsWith('blob:'))
      expect(network.length).toBeGreaterThan(0)
      expect(network.filter((u) => new URL(u).origin !== origin)).toEqual([])
      expect(network).toEqual(expect.arrayContaining([`${origin}/docs`, `${origin}/docs/init.js`, `${origin}/v1/openapi.json`]))
      expect(network.some((u) => u.startsWith(`${origin}/docs/scalar.js?v=`))).toBe(true)
      expect(failed).toEqual([])
      expect(problems).toEqual([])
    },
    240_000,
  )
})
