/**
 * A DATA_DIR of its own for a service process, removed by dispose(). Its folder is
 * open for traversal (0755): as root, the embedded PostgreSQL server runs as the user
 * postgres, who must reach it. dispose() also stops the embedded server a service
 * killed with SIGKILL left running.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stopOrphanedServer } from '../../src/db/embedded-postgres'

export interface DataDir {
  dataDir: string
  dispose(): Promise<void>
}

export function freshDataDir(label: string): DataDir {
  const dir = mkdtempSync(join(tmpdir(), `voice-${label}-`))
  chmodSync(dir, 0o755)
  const dataDir = join(dir, 'data')
  return {
    dataDir,
    async dispose() {
      await stopOrphanedServer(dataDir)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
