import type { CursorCodec } from '../src/pagination'
import type { Deps } from '../src/services/deps'
import type { SessionTokens } from '../src/services/sessions'
import type { Database } from '../src/db/client'

/** Everything the gateway needs, handed in by main.ts (or a test). */
export interface GatewayDeps extends Deps {
  database: Database
  tokens: SessionTokens
  cursors: CursorCodec
  /** Roles of this process that must be ready before /readyz answers 200. */
  readiness: () => Promise<boolean>
}
