/**
 * The CLI's argument parsing and help text: every command declares its options
 * once, and the same declaration parses `--name value`, `--name=value` and bare
 * flags, refuses unknown options, and prints `--help`.
 */

/** A mistake in how the CLI was called: the message and the command's usage go to stderr, exit 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly usage?: string,
  ) {
    super(message)
  }
}

export interface OptionSpec {
  /** Without the leading dashes, e.g. `forward-to`. */
  name: string
  /** A flag takes no value; a string option takes exactly one. */
  kind: 'flag' | 'string'
  /** How the value is shown in help, e.g. `<url>`. */
  value?: string
  description: string
  /** May be given more than once (values are kept in order). */
  repeatable?: boolean
}

export interface ParsedArgs {
  positionals: string[]
  /** The last value of each string option given; `true` for a flag given. */
  options: Map<string, string | true>
  /** Every value of each repeatable option, in order. */
  all: Map<string, string[]>
  help: boolean
}

export function parseArgs(argv: string[], specs: OptionSpec[], usage: string): ParsedArgs {
  const byName = new Map(specs.map((s) => [s.name, s]))
  const out: ParsedArgs = { positionals: [], options: new Map(), all: new Map(), help: false }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--help' || arg === '-h') {
      out.help = true
      continue
    }
    if (arg === '--') {
      out.positionals.push(...argv.slice(i + 1))
      break
    }
    if (!arg.startsWith('--')) {
      out.positionals.push(arg)
      continue
    }
    const eq = arg.indexOf('=')
    const name = arg.slice(2, eq === -1 ? undefined : eq)
    const spec = byName.get(name)
    if (!spec) throw new UsageError(`unknown option --${name}`, usage)
    if (spec.kind === 'flag') {
      if (eq !== -1) throw new UsageError(`--${name} takes no value`, usage)
      out.options.set(name, true)
      continue
    }
    let value: string | undefined
    if (eq !== -1) value = arg.slice(eq + 1)
    else {
      value = argv[i + 1]
      if (value === undefined || (value.startsWith('--') && value.length > 2)) throw new UsageError(`--${name} needs a value`, usage)
      i++
    }
    if (out.options.has(name) && !spec.repeatable) throw new UsageError(`--${name} given twice`, usage)
    out.options.set(name, value)
    out.all.set(name, [...(out.all.get(name) ?? []), value])
  }
  return out
}

export const stringOption = (a: ParsedArgs, name: string): string | undefined => {
  const v = a.options.get(name)
  return typeof v === 'string' ? v : undefined
}

export const flag = (a: ParsedArgs, name: string): boolean => a.options.get(name) === true

/** A whole number within bounds, or undefined when the option is absent. */
export function intOption(a: ParsedArgs, name: string, min: number, max: number, usage: string): number | undefined {
  const v = stringOption(a, name)
  if (v === undefined) return undefined
  const n = Number(v)
  if (!/^-?\d+$/.test(v) || n < min || n > max) throw new UsageError(`--${name} must be a whole number from ${min} to ${max}, got "${v}"`, usage)
  return n
}

/** The help of one command: usage line(s), what it does, then every option with its description. */
export function helpText(c: { usage: string; description: string; options: OptionSpec[]; examples?: string[] }): string {
  const rows = [...c.options.map((o) => [`--${o.name}${o.value ? ` ${o.value}` : ''}`, o.description]), ['-h, --help', 'show this help']] as const
  const width = Math.max(...rows.map(([l]) => l.length))
  const lines = [`usage: ${c.usage}`, '', c.description, '', 'options:', ...rows.map(([l, d]) => `  ${l.padEnd(width)}  ${d}`)]
  if (c.examples?.length) lines.push('', 'examples:', ...c.examples.map((e) => `  ${e}`))
  return `${lines.join('\n')}\n`
}
