/**
 * The command line: `npm run cli -- <command> …` (`bun src/cli.ts …`), `--help` on
 * every command.
 *
 * Developer commands talk to a running service over HTTP (--url, --key, --account):
 *   listen --forward-to <url>    the account's events, forwarded as signed webhooks
 *   trigger <event type>         a sample event (sandbox test helper)
 *   simulate-call …              a simulated call, --follow to print its events
 * Operator commands: `platform create|update` straight against the configured
 * database (DATA_DIR or DATABASE_URL); `dead-letters list|replay` and `mail list`
 * over the operator API (VOICE_ADMIN_TOKEN).
 */
import { type Env, ServiceError } from './cli/api'
import { helpText, parseArgs, UsageError } from './cli/args'
import type { Command } from './cli/command'
import { listenCommand } from './cli/listen'
import { deadLettersListCommand, deadLettersReplayCommand, mailListCommand } from './cli/operator'
import { platformCreateCommand, platformUpdateCommand } from './cli/platform'
import { simulateCallCommand } from './cli/simulate-call'
import { triggerCommand } from './cli/trigger'

export const COMMANDS: Command[] = [
  listenCommand,
  triggerCommand,
  simulateCallCommand,
  platformCreateCommand,
  platformUpdateCommand,
  deadLettersListCommand,
  deadLettersReplayCommand,
  mailListCommand,
]

function topHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length))
  const line = (c: Command) => `  ${c.name.padEnd(width)}  ${c.summary}`
  const developer = COMMANDS.filter((c) => ['listen', 'trigger', 'simulate-call'].includes(c.name))
  return [
    'usage: npm run cli -- <command> [options]      (or: bun src/cli.ts <command> [options])',
    '',
    'Developer commands (a running service over HTTP; --url, --key or VOICE_API_KEY, --account or VOICE_ACCOUNT):',
    ...developer.map(line),
    '',
    'Operator commands:',
    ...COMMANDS.filter((c) => !developer.includes(c)).map(line),
    '',
    'Run `npm run cli -- <command> --help` for a command’s options.',
    '',
  ].join('\n')
}

/** The command named by the first one or two words, with the words that follow. */
function findCommand(argv: string[]): { command?: Command; rest: string[]; group?: string } {
  const two = COMMANDS.find((c) => c.name === `${argv[0]} ${argv[1]}`)
  if (two) return { command: two, rest: argv.slice(2) }
  const one = COMMANDS.find((c) => c.name === argv[0])
  if (one) return { command: one, rest: argv.slice(1) }
  const group = COMMANDS.some((c) => c.name.startsWith(`${argv[0]} `)) ? argv[0] : undefined
  return { rest: argv.slice(1), group }
}

export interface CliIo {
  out?: (text: string) => void
  err?: (text: string) => void
  signal?: AbortSignal
}

export async function runCli(argv: string[], env: Env = process.env, io: CliIo = {}): Promise<number> {
  const out = io.out ?? ((t: string) => void process.stdout.write(t))
  const err = io.err ?? ((t: string) => void process.stderr.write(t))
  const signal = io.signal ?? new AbortController().signal
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h' || argv[0] === 'help') {
    // `help <command>` is `<command> --help`.
    if (argv[0] === 'help' && argv.length > 1) return runCli([...argv.slice(1), '--help'], env, io)
    out(topHelp())
    return argv.length === 0 ? 2 : 0
  }
  const { command, rest, group } = findCommand(argv)
  if (!command) {
    if (group) {
      const verbs = COMMANDS.filter((c) => c.name.startsWith(`${group} `))
      if (rest.includes('--help') || rest.includes('-h')) {
        out(verbs.map((c) => `usage: ${c.usage}\n  ${c.summary}\n`).join('\n'))
        return 0
      }
      err(`unknown command: ${argv.slice(0, 2).join(' ')}\n${verbs.map((c) => `usage: ${c.usage}`).join('\n')}\n`)
      return 2
    }
    err(`unknown command: ${argv[0]}\n\n${topHelp()}`)
    return 2
  }
  try {
    const wantsHelp = rest.includes('--help') || rest.includes('-h')
    if (wantsHelp) {
      out(helpText(command))
      return 0
    }
    const args = command.ownParsing ? { positionals: [], options: new Map(), all: new Map(), help: false } : parseArgs(rest, command.options, command.usage)
    return await command.run(args, { env, out, err, signal }, rest)
  } catch (e) {
    if (e instanceof UsageError) {
      err(`${e.message}\nusage: ${e.usage ?? command.usage}\n(run with --help for every option)\n`)
      return 2
    }
    if (e instanceof ServiceError) {
      err(e.describe())
      return 1
    }
    throw e
  }
}

if (import.meta.main) {
  const stop = new AbortController()
  let interrupts = 0
  const onSignal = () => {
    // The first Ctrl-C stops the command cleanly; a second one does not wait.
    if (++interrupts > 1) process.exit(130)
    stop.abort()
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  const code = await runCli(process.argv.slice(2), process.env, { signal: stop.signal })
  process.exit(code)
}
