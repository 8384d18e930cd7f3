/**
 * How the developer commands reach a running service: its base URL, a sandbox
 * secret key and the account (the `Service-Account` header), from options or the
 * environment, and one request helper that turns error bodies into readable errors.
 */
import { type OptionSpec, type ParsedArgs, stringOption, UsageError } from './args'

export type Env = Record<string, string | undefined>

export const CONNECTION_OPTIONS: OptionSpec[] = [
  {
    name: 'url',
    kind: 'string',
    value: '<url>',
    description: 'base URL of the running service (default $VOICE_API_URL, else http://127.0.0.1:$PORT, PORT defaulting to 8080)',
  },
  { name: 'key', kind: 'string', value: '<sk_test_…>', description: 'secret key (default $VOICE_API_KEY)' },
  { name: 'account', kind: 'string', value: '<acct_…>', description: 'account the command acts on, sent as Service-Account (default $VOICE_ACCOUNT)' },
]

export interface Connection {
  baseUrl: string
  key: string
  account: string
}

export function connection(a: ParsedArgs, env: Env, usage: string): Connection {
  const port = env.PORT && /^\d+$/.test(env.PORT) && env.PORT !== '0' ? env.PORT : '8080'
  const raw = stringOption(a, 'url') ?? env.VOICE_API_URL ?? `http://127.0.0.1:${port}`
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    throw new UsageError(`--url is not a URL: ${raw}`, usage)
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`--url must be http or https, got ${raw}`, usage)
  const key = stringOption(a, 'key') ?? env.VOICE_API_KEY
  if (!key) throw new UsageError('a secret key is needed: --key or VOICE_API_KEY', usage)
  const account = stringOption(a, 'account') ?? env.VOICE_ACCOUNT
  if (!account) throw new UsageError('an account is needed: --account or VOICE_ACCOUNT', usage)
  return { baseUrl: url.href.replace(/\/+$/, ''), key, account }
}

/** A non-2xx answer of the service (`{error, code, details}`), or no answer at all. */
export class ServiceError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    readonly code?: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message)
  }

  /** The message, the status and code, and each detail on its own line (lists joined). */
  describe(): string {
    const head = this.status === undefined ? this.message : `${this.message} (${this.status}${this.code ? ` ${this.code}` : ''})`
    const lines = [`error: ${head}`]
    for (const [k, v] of Object.entries(this.details ?? {}))
      lines.push(`  ${k}: ${Array.isArray(v) ? v.join(', ') : typeof v === 'string' ? v : JSON.stringify(v)}`)
    return `${lines.join('\n')}\n`
  }
}

export async function request<T = unknown>(
  c: Pick<Connection, 'baseUrl' | 'key'> & { account?: string },
  method: string,
  path: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<T> {
  const headers: Record<string, string> = { authorization: `Bearer ${c.key}`, 'user-agent': 'voice-cli/1.0' }
  if (c.account) headers['service-account'] = c.account
  if (body !== undefined) headers['content-type'] = 'application/json'
  let res: Response
  try {
    res = await fetch(c.baseUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal })
  } catch (e) {
    if (signal?.aborted) throw e
    throw new ServiceError(`cannot reach ${c.baseUrl}: ${(e as Error).message}`)
  }
  return answerOf<T>(res)
}

/** The parsed body of a 2xx answer; a ServiceError otherwise. */
export async function answerOf<T>(res: Response): Promise<T> {
  const text = await res.text()
  let parsed: unknown
  try {
    parsed = text ? JSON.parse(text) : undefined
  } catch {}
  if (res.ok) return parsed as T
  const e = parsed as { error?: unknown; code?: unknown; details?: unknown } | undefined
  if (e && typeof e.error === 'string')
    throw new ServiceError(
      e.error,
      res.status,
      typeof e.code === 'string' ? e.code : undefined,
      e.details && typeof e.details === 'object' ? (e.details as Record<string, unknown>) : undefined,
    )
  throw new ServiceError(`the service answered ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`, res.status)
}
