/**
 * The human side of the API: `GET /docs`, an HTML reference rendered in the browser
 * by Scalar from the served `/v1/openapi.json`, and `GET /`, an index of what a
 * person or a probe can open. Outside /v1, so not part of the OpenAPI document, and
 * public like the document itself.
 *
 * The page works offline: Scalar's standalone bundle comes from the installed npm
 * package and is served by the service; Scalar is configured to fetch nothing from
 * anywhere else, and the Content-Security-Policy holds the browser to that.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { Elysia } from 'elysia'

const OPENAPI_URL = '/v1/openapi.json'

/**
 * Scalar's options, each chosen so that the page reaches nothing but this service:
 * no web fonts from fonts.scalar.com, no telemetry, no request proxy (proxy.scalar.com
 * is Scalar's default for the "web" environment), no agent chat, and no "Test request"
 * client, whose requests could be pointed at any host.
 */
const SCALAR_OPTIONS = {
  url: OPENAPI_URL,
  withDefaultFonts: false,
  telemetry: false,
  proxyUrl: '',
  agent: { disabled: true },
  hideClientButton: true,
  hideTestRequestButton: true,
  showDeveloperTools: 'never',
  documentDownloadType: 'json',
  // Tags stay closed (each lists its operations as method and path) and open on a click:
  // rendering all 170-odd operations at once keeps the browser busy for tens of seconds.
  defaultOpenAllTags: false,
}

/**
 * Everything from this origin; inline styles because Scalar injects its CSS at run
 * time; data: images for its icons. No other host is reachable from the page.
 */
const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "frame-ancestors 'self'",
  "form-action 'self'",
].join('; ')

type HeaderMap = Record<string, string | number>

const htmlHeaders = (headers: HeaderMap) => {
  headers['content-type'] = 'text/html; charset=utf-8'
  headers['content-security-policy'] = CONTENT_SECURITY_POLICY
  headers['x-content-type-options'] = 'nosniff'
}

const scriptHeaders = (headers: HeaderMap, immutable: boolean) => {
  headers['content-type'] = 'text/javascript; charset=utf-8'
  headers['x-content-type-options'] = 'nosniff'
  // The page asks for the bundle under its content hash (?v=), so a new bundle is a new URL.
  headers['cache-control'] = immutable ? 'public, max-age=31536000, immutable' : 'no-cache'
}

const INDEX = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Business Voice Service</title><meta name="viewport" content="width=device-width, initial-scale=1"><link rel="icon" href="data:,"></head>
<body>
<h1>Business Voice Service</h1>
<ul>
<li><a href="/docs">API reference</a> (<code>/docs</code>)</li>
<li><a href="${OPENAPI_URL}">OpenAPI document</a> (<code>${OPENAPI_URL}</code>)</li>
<li><a href="/healthz">Health</a> (<code>/healthz</code>) and <a href="/readyz">readiness</a> (<code>/readyz</code>)</li>
</ul>
</body>
</html>
`

const page = (bundleVersion: string) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Business Voice Service API reference</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<!-- No icon: otherwise every visit asks for /favicon.ico and gets a 404. -->
<link rel="icon" href="data:,">
</head>
<body>
<noscript>The API reference needs JavaScript. The OpenAPI document itself is at <a href="${OPENAPI_URL}">${OPENAPI_URL}</a>.</noscript>
<!-- Not id="api-reference": the bundle mounts itself there on load, with its default options (web fonts included). -->
<div id="reference"></div>
<script src="/docs/scalar.js?v=${bundleVersion}"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`

export function docsPageRoutes() {
  // Resolved now, so that a missing package fails at start rather than on the first visit.
  const bundlePath = fileURLToPath(import.meta.resolve('@scalar/api-reference/browser/standalone.js'))
  let bundle: { bytes: Uint8Array; version: string } | undefined
  // Read on first use (3.5 MB that most processes never serve), then kept.
  const scalarBundle = () => {
    if (!bundle) {
      const bytes = readFileSync(bundlePath)
      bundle = { bytes, version: createHash('sha256').update(bytes).digest('hex').slice(0, 16) }
    }
    return bundle
  }
  // The configuration is a script of its own, not inline, so that the policy can forbid inline scripts.
  const init = `Scalar.createApiReference('#reference', ${JSON.stringify(SCALAR_OPTIONS)})\n`

  return new Elysia({ name: 'routes/docs-page' })
    .get('/', ({ set }) => {
      htmlHeaders(set.headers)
      return INDEX
    })
    .get('/docs', ({ set }) => {
      htmlHeaders(set.headers)
      return page(scalarBundle().version)
    })
    .get('/docs/scalar.js', ({ set }) => {
      scriptHeaders(set.headers, true)
      return scalarBundle().bytes
    })
    .get('/docs/init.js', ({ set }) => {
      scriptHeaders(set.headers, false)
      return init
    })
}
