/** What every CLI command is: its help, its options, and what it runs. */
import type { Env } from './api'
import type { OptionSpec, ParsedArgs } from './args'

export interface CommandContext {
  env: Env
  out: (text: string) => void
  err: (text: string) => void
  /** Aborted on Ctrl-C (SIGINT) or SIGTERM: long commands stop cleanly. */
  signal: AbortSignal
}

export interface Command {
  /** One or two words, e.g. `listen` or `platform create`. */
  name: string
  /** One line for the command list. */
  summary: string
  usage: string
  description: string
  options: OptionSpec[]
  examples?: string[]
  /** The command reads its own arguments (`rest`); `args` then only carries --help. */
  ownParsing?: boolean
  run(args: ParsedArgs, ctx: CommandContext, rest?: string[]): Promise<number>
}
