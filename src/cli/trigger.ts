/** `trigger <event type>`: a sample event through POST /v1/test_helpers/events (sandbox). */
import { CONNECTION_OPTIONS, connection, request, ServiceError } from './api'
import { flag, type ParsedArgs, UsageError } from './args'
import type { Command, CommandContext } from './command'

const USAGE = 'cli trigger <event type> [--json] [--url <url>] [--key <sk_test_…>] [--account <acct_…>]'

export const triggerCommand: Command = {
  name: 'trigger',
  summary: 'send a sample event of a type (sandbox test helper)',
  usage: USAGE,
  description: [
    'Sends a sample event of the given type to the account through POST /v1/test_helpers/events (sandbox',
    'keys only): it goes through the same signed, retried, ordered webhook path as a real one, so a',
    "running `listen --source webhook` or the account's webhook endpoints receive it. Prints the new",
    "event's id (the whole event with --json). An unknown type exits 1 with the service's error, which",
    'names the closest supported type and lists the supported ones. Supported types include fax.*,',
    'queue.call.*, device.*, user.created, user.deleted, phone_number.*, recording.failed and',
    'call.mobile_push_wakeup (see the createTestEvent operation).',
  ].join('\n'),
  options: [{ name: 'json', kind: 'flag', description: 'print the whole event as JSON' }, ...CONNECTION_OPTIONS],
  examples: ['npm run cli -- trigger fax.received --key sk_test_… --account acct_…'],
  async run(a: ParsedArgs, ctx: CommandContext) {
    const [type, extra] = a.positionals
    if (!type) throw new UsageError('trigger needs an event type, e.g. fax.received', USAGE)
    if (extra !== undefined) throw new UsageError(`unexpected argument ${extra}`, USAGE)
    const conn = connection(a, ctx.env, USAGE)
    try {
      const event = await request<{ id: string; type: string }>(conn, 'POST', '/v1/test_helpers/events', { event: type }, ctx.signal)
      ctx.out(flag(a, 'json') ? `${JSON.stringify(event, null, 2)}\n` : `${event.id}\n`)
      return 0
    } catch (e) {
      if (!(e instanceof ServiceError)) throw e
      ctx.err(e.describe())
      return 1
    }
  },
}
