import type { SessionComponent } from '../schemas/sessions'
import type { Mode } from './platforms'

/** Who is calling, as established by one of the three credential kinds. */
export type Principal =
  | { kind: 'secret_key'; actor: string; platformId: string; mode: Mode; liveEnabled: boolean }
  | { kind: 'account_session'; actor: string; platformId: string; mode: Mode; accountId: string; components: ReadonlySet<SessionComponent> }
  | { kind: 'user_session'; actor: string; platformId: string; mode: Mode; accountId: string; userId: string }

export type Capability = SessionComponent

/** Capabilities a platform secret key holds: all of them. */
export function hasCapability(p: Principal, c: Capability): boolean {
  if (p.kind === 'secret_key') return true
  if (p.kind === 'account_session') return p.components.has(c)
  return false
}
