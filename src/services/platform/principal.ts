import type { SessionComponent } from '../../schemas/platform'
import type { Mode } from './platforms'

/** Who is calling, as established by one of the three credential kinds. */
export type Principal =
  | { kind: 'secret_key'; actor: string; platformId: string; mode: Mode; liveEnabled: boolean }
  | { kind: 'account_session'; actor: string; platformId: string; mode: Mode; accountId: string; components: ReadonlySet<SessionComponent> }
  | { kind: 'user_session'; actor: string; platformId: string; mode: Mode; accountId: string; userId: string }

export type Capability = SessionComponent
