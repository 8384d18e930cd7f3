/**
 * Operator commands over the running service's operator API (/admin, enabled by
 * VOICE_ADMIN_TOKEN): the dead-letter queue and the recorded operator mailbox.
 */
import { type Env, request, ServiceError } from './api'
import { intOption, type OptionSpec, type ParsedArgs, stringOption, UsageError } from './args'
import type { Command, CommandContext } from './command'

const ADMIN_OPTIONS: OptionSpec[] = [
  {
    name: 'url',
    kind: 'string',
    value: '<url>',
    description: 'base URL of the running service (default $VOICE_API_URL, else http://127.0.0.1:$PORT, PORT defaulting to 8080)',
  },
  { name: 'admin-token', kind: 'string', value: '<token>', description: 'the operator token (default $VOICE_ADMIN_TOKEN)' },
]
const LIMIT: OptionSpec = { name: 'limit', kind: 'string', value: '<n>', description: 'at most n entries, newest first (1 to 500, default 100)' }

function admin(a: ParsedArgs, env: Env, usage: string) {
  const port = env.PORT && /^\d+$/.test(env.PORT) && env.PORT !== '0' ? env.PORT : '8080'
  const baseUrl = (stringOption(a, 'url') ?? env.VOICE_API_URL ?? `http://127.0.0.1:${port}`).replace(/\/+$/, '')
  if (!URL.canParse(baseUrl)) throw new UsageError(`--url is not a URL: ${baseUrl}`, usage)
  const key = stringOption(a, 'admin-token') ?? env.VOICE_ADMIN_TOKEN
  if (!key) throw new UsageError('the operator token is needed: --admin-token or VOICE_ADMIN_TOKEN', usage)
  return { baseUrl, key }
}

async function printJson(ctx: CommandContext, call: () => Promise<unknown>): Promise<number> {
  try {
    ctx.out(`${JSON.stringify(await call(), null, 2)}\n`)
    return 0
  } catch (e) {
    if (!(e instanceof ServiceError)) throw e
    ctx.err(e.describe())
    return 1
  }
}

function noPositionals(a: ParsedArgs, usage: string) {
  if (a.positionals.length > 0) throw new UsageError(`unexpected argument ${a.positionals[0]}`, usage)
}

const DL_LIST = 'cli dead-letters list [--limit <n>] [--url <url>] [--admin-token <token>]'
const DL_REPLAY = 'cli dead-letters replay <delivery_id> [--url <url>] [--admin-token <token>]'
const MAIL_LIST = 'cli mail list [--limit <n>] [--url <url>] [--admin-token <token>]'

export const deadLettersListCommand: Command = {
  name: 'dead-letters list',
  summary: 'list webhook deliveries that used up their attempts (operator API)',
  usage: DL_LIST,
  description: 'Prints GET /admin/dead-letters of the running service as JSON: webhook deliveries that used up their attempts.',
  options: [LIMIT, ...ADMIN_OPTIONS],
  async run(a, ctx) {
    noPositionals(a, DL_LIST)
    const limit = intOption(a, 'limit', 1, 500, DL_LIST)
    const c = admin(a, ctx.env, DL_LIST)
    return printJson(ctx, () => request(c, 'GET', `/admin/dead-letters${limit ? `?limit=${limit}` : ''}`, undefined, ctx.signal))
  },
}

export const deadLettersReplayCommand: Command = {
  name: 'dead-letters replay',
  summary: 'put a dead letter back in line with a fresh set of attempts (operator API)',
  usage: DL_REPLAY,
  description: 'POST /admin/dead-letters/{id}/replay on the running service: the delivery gets a fresh set of attempts.',
  options: ADMIN_OPTIONS,
  async run(a, ctx) {
    const [id, extra] = a.positionals
    if (!id) throw new UsageError('dead-letters replay needs the delivery id', DL_REPLAY)
    if (extra !== undefined) throw new UsageError(`unexpected argument ${extra}`, DL_REPLAY)
    const c = admin(a, ctx.env, DL_REPLAY)
    return printJson(ctx, () => request(c, 'POST', `/admin/dead-letters/${encodeURIComponent(id)}/replay`, undefined, ctx.signal))
  },
}

export const mailListCommand: Command = {
  name: 'mail list',
  summary: 'list the recorded operator mailbox (operator API, when SMTP_URL is unset)',
  usage: MAIL_LIST,
  description: 'Prints GET /admin/mail of the running service as JSON: the mail recorded for operators when no SMTP_URL is set.',
  options: [LIMIT, ...ADMIN_OPTIONS],
  async run(a, ctx) {
    noPositionals(a, MAIL_LIST)
    const limit = intOption(a, 'limit', 1, 500, MAIL_LIST)
    const c = admin(a, ctx.env, MAIL_LIST)
    return printJson(ctx, () => request(c, 'GET', `/admin/mail${limit ? `?limit=${limit}` : ''}`, undefined, ctx.signal))
  },
}
