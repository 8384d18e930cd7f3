/**
 * Documentation run as written: the fenced `sh` blocks of a Markdown section, and
 * one bash session that runs them one after another as a reader pasting them into
 * one terminal would (variables, functions and background jobs carry over).
 *
 *   const blocks = shellBlocks(readFileSync('README.md', 'utf8'), 'First request')
 *   const sh = await startShellSession(dir)
 *   const r = await sh.run(blocks[0]!, 10_000)   // { stdout, stderr }; throws when the block fails or hangs
 *   await sh.stop()                               // kills the session and everything it started
 *
 * The session runs `set -eo pipefail`: a failing command ends it, and `run` throws
 * with the block and what it printed. Each block reads nothing from the session's
 * input (< /dev/null) and its output goes to files of its own, read back by `run`.
 */
import type { Subprocess } from 'bun'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { collectOutput } from './scratch-postgres'

/** The bodies of the ```sh blocks under the `## <heading>` section (up to the next `## `), in order. */
export function shellBlocks(markdown: string, heading: string): string[] {
  const start = markdown.indexOf(`\n## ${heading}\n`)
  if (start < 0) throw new Error(`no "## ${heading}" section`)
  const rest = markdown.slice(start + heading.length + 5)
  const next = rest.search(/^## /m)
  const section = next < 0 ? rest : rest.slice(0, next)
  return [...section.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]!)
}

export interface ShellSession {
  /** Runs one block; resolves with what it printed once it is done, throws when it fails or outlasts `timeoutMs`. */
  run(block: string, timeoutMs: number): Promise<{ stdout: string; stderr: string }>
  /** The value of a shell variable now (empty when unset). */
  variable(name: string): Promise<string>
  /** Kills the session's process group (the shell and what it started in the background). */
  stop(): Promise<void>
}

/** A bash session in `cwd` with a minimal environment (PATH, HOME, locale): nothing of the test's own settings leaks in. */
export async function startShellSession(cwd: string): Promise<ShellSession> {
  const env: Record<string, string> = {}
  for (const k of ['PATH', 'HOME', 'LANG', 'LC_ALL', 'TMPDIR']) if (process.env[k]) env[k] = process.env[k]!
  const proc: Subprocess<'pipe', 'pipe', 'pipe'> = Bun.spawn(['bash', '--noprofile', '--norc'], {
    cwd,
    env,
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'pipe',
    // Its own process group: stop() ends the background jobs of the blocks too.
    detached: true,
  })
  const out = { text: '' }
  const err = { text: '' }
  collectOutput(proc.stdout, out)
  collectOutput(proc.stderr, err)
  let n = 0
  const send = (line: string) => {
    proc.stdin.write(`${line}\n`)
    proc.stdin.flush()
  }
  send('set -eo pipefail')

  async function done(marker: string, timeoutMs: number, what: () => string) {
    const deadline = Date.now() + timeoutMs
    while (!out.text.includes(marker)) {
      if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`the shell stopped (exit ${proc.exitCode ?? proc.signalCode}) in ${what()}`)
      if (Date.now() > deadline) throw new Error(`still running after ${timeoutMs} ms: ${what()}`)
      await Bun.sleep(20)
    }
  }

  const session: ShellSession = {
    async run(block, timeoutMs) {
      const i = ++n
      const [file, o, e] = [`block-${i}.sh`, `block-${i}.out`, `block-${i}.err`].map((f) => join(cwd, f))
      writeFileSync(file!, block)
      writeFileSync(o!, '')
      writeFileSync(e!, '')
      send(`source ${file} < /dev/null > ${o} 2> ${e}; echo __block_${i}_done`)
      const read = () => ({ stdout: readFileSync(o!, 'utf8'), stderr: readFileSync(e!, 'utf8') })
      await done(`__block_${i}_done`, timeoutMs, () => {
        const r = read()
        return `block ${i}:\n${block}\n--- stdout:\n${r.stdout}\n--- stderr:\n${r.stderr}${err.text}`
      })
      return read()
    },
    async variable(name) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`not a variable name: ${name}`)
      const marker = `__var_${++n}_`
      send(`printf '%s%s\\n%s\\n' ${marker} "\${${name}:-}" ${marker}end`)
      await done(`${marker}end`, 5_000, () => `reading $${name}`)
      const line = out.text.split('\n').find((l) => l.startsWith(marker))
      return line!.slice(marker.length)
    },
    async stop() {
      // The whole group: the shell (if still running) and the background jobs of its blocks.
      try {
        process.kill(-proc.pid, 'SIGKILL')
      } catch {}
      await proc.exited
    },
  }
  return session
}
