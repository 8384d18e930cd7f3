/**
 * `simulate-call`: a simulated call through the sandbox test helpers, either
 * straight to a user (POST /v1/test_helpers/calls) or through the account's
 * routing (POST /v1/test_helpers/inbound_calls); `--follow` prints the call's
 * events from the event stream until its call.end.
 */
import { CONNECTION_OPTIONS, type Connection, connection, request, ServiceError } from './api'
import { flag, intOption, type ParsedArgs, stringOption, UsageError } from './args'
import type { Command, CommandContext } from './command'
import { streamEvents } from './event-stream'

const USAGE = [
  'cli simulate-call --user <usr_…> [--from <+1…>] [--outcome answered|no-answer|busy|voicemail] [--follow] …',
  '       cli simulate-call --user <usr_…> --outbound --to <number> [--follow] …',
  '       cli simulate-call --to <account number or extension> [--from <+1…>] [--digits <d>] [--outcomes <usr_…=answer,…>] [--follow] …',
].join('\n')

const OUTCOMES = ['answered', 'no-answer', 'busy', 'voicemail']
const USER_OUTCOMES = ['answer', 'no-answer', 'busy', 'dnd']
/** How often, without news, --follow says it is still waiting. */
const PROGRESS_EVERY_MS = 5000

export const simulateCallCommand: Command = {
  name: 'simulate-call',
  summary: 'simulate a call (sandbox test helper), optionally following its events',
  usage: USAGE,
  description: [
    'Places a simulated call on the account (sandbox keys only) and prints its id.',
    '  With --user: the call rings that user directly (POST /v1/test_helpers/calls); the account side is',
    '    its first phone number. Inbound by default, from --from; --outbound dials --to instead (magic',
    '    numbers +15005550100..0104 and 933 behave as documented). --outcome and the durations shape it.',
    "  Without --user: --to is one of the account's numbers or extensions and the call follows the",
    "    account's routing (POST /v1/test_helpers/inbound_calls); --digits answers menus and --outcomes",
    '    says how each user reacts when rung (answer, no-answer, busy, dnd).',
    "With --follow it opens the event stream before placing the call, then prints each of the call's",
    'events (time, type, and status on call.end) until call.end, a progress line every 5 s while',
    'nothing happens, and exits 0 (1 when --timeout passes first). The stream carries the call.* events',
    'except call.ringing and call.emergency; use `listen` for the others.',
  ].join('\n'),
  options: [
    { name: 'user', kind: 'string', value: '<usr_…>', description: 'the user rung (inbound) or calling (outbound); without it the call is routed' },
    { name: 'from', kind: 'string', value: '<+1…>', description: 'the caller’s number (inbound)' },
    { name: 'from-name', kind: 'string', value: '<name>', description: 'the caller’s name (inbound)' },
    {
      name: 'to',
      kind: 'string',
      value: '<number>',
      description: 'outbound destination with --outbound; without --user, the account number or extension called',
    },
    { name: 'outbound', kind: 'flag', description: 'with --user: the user calls --to' },
    { name: 'outcome', kind: 'string', value: '<outcome>', description: `with --user: ${OUTCOMES.join(', ')} (default answered)` },
    { name: 'ring-seconds', kind: 'string', value: '<n>', description: 'with --user: seconds of ringing (0 to 120)' },
    { name: 'talk-seconds', kind: 'string', value: '<n>', description: 'seconds of talk once answered (0 to 120)' },
    { name: 'voicemail-seconds', kind: 'string', value: '<n>', description: 'with --user: length of the voicemail message (0 to 120)' },
    { name: 'no-recording', kind: 'flag', description: 'with --user: no recording' },
    { name: 'digits', kind: 'string', value: '<digits>', description: 'routed: menu input, one character per menu ("-" is no input)' },
    { name: 'outcomes', kind: 'string', value: '<usr_…=answer,…>', description: `routed: how users react when rung (${USER_OUTCOMES.join(', ')})` },
    { name: 'hangup-after-seconds', kind: 'string', value: '<n>', description: 'routed: the caller hangs up after n seconds unless answered' },
    { name: 'at', kind: 'string', value: '<ISO time>', description: 'routed: when the routing is evaluated (schedules; default now)' },
    { name: 'follow', kind: 'flag', description: "print the call's events until call.end" },
    { name: 'timeout', kind: 'string', value: '<seconds>', description: 'with --follow: give up after this long (default 600)' },
    { name: 'json', kind: 'flag', description: 'print the helper’s whole answer as JSON instead of the id' },
    ...CONNECTION_OPTIONS,
  ],
  examples: [
    'npm run cli -- simulate-call --user usr_… --from +15551234567 --outcome voicemail --follow',
    'npm run cli -- simulate-call --user usr_… --outbound --to +15005550100',
    'npm run cli -- simulate-call --to +15005550001 --digits 1 --outcomes usr_a=no-answer,usr_b=answer --follow',
  ],
  run: simulateCall,
}

function seconds(a: ParsedArgs, name: string, max = 120): number | undefined {
  return intOption(a, name, 0, max, USAGE)
}

/** The helper to call and its body, from the options. */
function helperRequest(a: ParsedArgs): { path: string; body: Record<string, unknown> } {
  const user = stringOption(a, 'user')
  const to = stringOption(a, 'to')
  const from = stringOption(a, 'from')
  const fromName = stringOption(a, 'from-name')
  const talk = seconds(a, 'talk-seconds')
  if (user) {
    for (const routedOnly of ['digits', 'outcomes', 'hangup-after-seconds', 'at'])
      if (a.options.has(routedOnly)) throw new UsageError(`--${routedOnly} goes with a routed call (no --user)`, USAGE)
    const outbound = flag(a, 'outbound')
    if (outbound && !to) throw new UsageError('--outbound needs --to', USAGE)
    if (!outbound && to) throw new UsageError('--to with --user needs --outbound (an inbound call rings the user directly)', USAGE)
    const outcome = stringOption(a, 'outcome')
    if (outcome !== undefined && !OUTCOMES.includes(outcome)) throw new UsageError(`--outcome must be one of ${OUTCOMES.join(', ')}, got "${outcome}"`, USAGE)
    const scenario: Record<string, unknown> = {}
    if (outcome) scenario.outcome = outcome
    const ring = seconds(a, 'ring-seconds')
    const voicemail = seconds(a, 'voicemail-seconds')
    if (ring !== undefined) scenario.ring_seconds = ring
    if (talk !== undefined) scenario.talk_seconds = talk
    if (voicemail !== undefined) scenario.voicemail_seconds = voicemail
    if (flag(a, 'no-recording')) scenario.recording = false
    const body: Record<string, unknown> = { user }
    if (outbound) Object.assign(body, { direction: 'outbound', to_number: to })
    if (from) body.from_number = from
    if (fromName) body.from_name = fromName
    if (Object.keys(scenario).length > 0) body.scenario = scenario
    return { path: '/v1/test_helpers/calls', body }
  }
  if (!to) throw new UsageError('simulate-call needs --user (a direct call) or --to (a call through the account’s routing)', USAGE)
  for (const directOnly of ['outbound', 'outcome', 'ring-seconds', 'voicemail-seconds', 'no-recording'])
    if (a.options.has(directOnly)) throw new UsageError(`--${directOnly} goes with --user`, USAGE)
  const body: Record<string, unknown> = { to }
  if (from) body.from_number = from
  if (fromName) body.from_name = fromName
  if (talk !== undefined) body.talk_seconds = talk
  const digits = stringOption(a, 'digits')
  if (digits !== undefined) body.digits = digits
  const at = stringOption(a, 'at')
  if (at !== undefined) body.at = at
  const hangup = seconds(a, 'hangup-after-seconds', 3600)
  if (hangup !== undefined) body.hangup_after_seconds = hangup
  const outcomes = stringOption(a, 'outcomes')
  if (outcomes !== undefined) {
    const map: Record<string, string> = {}
    for (const pair of outcomes.split(',').filter(Boolean)) {
      const [u, o] = pair.split('=')
      if (!u || !o || !USER_OUTCOMES.includes(o))
        throw new UsageError(`--outcomes takes user=outcome pairs (${USER_OUTCOMES.join(', ')}), got "${pair}"`, USAGE)
      map[u] = o
    }
    body.outcomes = map
  }
  return { path: '/v1/test_helpers/inbound_calls', body }
}

async function simulateCall(a: ParsedArgs, ctx: CommandContext): Promise<number> {
  if (a.positionals.length > 0) throw new UsageError(`unexpected argument ${a.positionals[0]}`, USAGE)
  const helper = helperRequest(a)
  const timeoutMs = (intOption(a, 'timeout', 1, 24 * 3600, USAGE) ?? 600) * 1000
  const conn = connection(a, ctx.env, USAGE)
  const place = async () => {
    const answer = await request<{ id: string }>(conn, 'POST', helper.path, helper.body, ctx.signal)
    ctx.out(flag(a, 'json') ? `${JSON.stringify(answer, null, 2)}\n` : `${answer.id}\n`)
    return answer.id
  }
  try {
    if (!flag(a, 'follow')) {
      await place()
      return 0
    }
    return await follow(conn, place, timeoutMs, ctx)
  } catch (e) {
    if (!(e instanceof ServiceError)) throw e
    ctx.err(e.describe())
    return 1
  }
}

/** Opens the stream, places the call once it is open, then prints the call's events until its call.end. */
async function follow(conn: Connection, place: () => Promise<string>, timeoutMs: number, ctx: CommandContext): Promise<number> {
  const deadline = AbortSignal.timeout(timeoutMs)
  const done = new AbortController()
  const signal = AbortSignal.any([ctx.signal, deadline, done.signal])
  let callId: string | undefined
  const started = Date.now()
  let lastNews = Date.now()
  let state = 'placed'
  const progress = setInterval(() => {
    if (Date.now() - lastNews < PROGRESS_EVERY_MS) return
    ctx.err(`… ${callId ?? 'call'} ${state}, ${Math.round((Date.now() - started) / 1000)} s so far\n`)
    lastNews = Date.now()
  }, 1000)
  try {
    for await (const ev of streamEvents(conn, {
      signal,
      notice: (t) => ctx.err(`${t}\n`),
      onOpen: async (reconnect) => {
        if (!reconnect) callId = await place()
      },
    })) {
      if (ev.payload.call_id !== callId) continue
      lastNews = Date.now()
      state = `after ${ev.type}`
      const status = ev.type === 'call.end' ? `  status=${ev.payload.status} duration=${ev.payload.duration_seconds}s` : ''
      ctx.out(`${new Date().toISOString()}  ${ev.type.padEnd(16)}  ${ev.id}${status}\n`)
      if (ev.type === 'call.end') {
        done.abort()
        return 0
      }
    }
  } finally {
    clearInterval(progress)
  }
  if (deadline.aborted) {
    ctx.err(`error: no call.end for ${callId ?? 'the call'} within ${timeoutMs / 1000} s\n`)
    return 1
  }
  return ctx.signal.aborted ? 130 : 1
}
