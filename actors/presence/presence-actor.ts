/**
 * The presence actor: binds the pure `presence.v1` machine (one per user) to its
 * effects. It has no projection and no outbox event: the spec names no presence
 * event, and the routes read the persisted snapshot itself (actors/presence/messages).
 *
 * Commands (PUT /v1/me/presence) are durable `$command` messages judged again by the
 * machine when they arrive; calls reach it as CALL_STARTED / CALL_ENDED tells from
 * the call actor (actors/presence/call-presence).
 */
import { admitPresenceCommand, type PresenceSnapshot } from '../../machines/presence'
import { defineActorKind } from '../runtime/kinds'
import { PRESENCE_KIND, PRESENCE_MACHINES, type PresenceCommandMessage } from './messages'

export function createPresenceKind() {
  const kind = defineActorKind({
    kind: PRESENCE_KIND,
    machines: PRESENCE_MACHINES,
    // Nothing to publish: the record is read from the snapshot.
    actions: () => ({ emit: () => {} }),
    commands: {
      // No actor yet: the spawn written with the command carries the same change, so the command has nothing left to do.
      admit: (m: PresenceCommandMessage, snapshot) =>
        snapshot
          ? admitPresenceCommand(snapshot as PresenceSnapshot, m.command, m.at)
          : { refused: { code: 'presence_not_started', reason: 'the presence actor does not exist yet' } },
      outcome: () => [],
    },
  })
  return { kind }
}
