/**
 * The fax actor (`fax.v1`): binds machines/fax.ts to effects, all committed in the
 * step's one transaction:
 *  - transmit        → the carrier (FaxCarrier) takes the fax; its answers (dialled,
 *                      delivered or failed) become this actor's durable timers, so a
 *                      restart neither loses nor repeats them;
 *  - transmitCancel  → the answers still due are cancelled;
 *  - project         → the faxes row;
 *  - finished        → the fax's one final event in the outbox: fax.delivered or
 *                      fax.failed, with the spec's fields.
 */
import type { FaxContext, FaxOutcome, FaxProjection, FaxSnapshot, FaxTransmission } from '../../machines/fax'
import type { FaxCarrier } from '../../src/services/faxes/carrier'
import { projectFax } from '../../src/services/faxes/faxes'
import { defineActorKind, type Effects } from '../runtime/kinds'
import { admitFax, FAX_KIND, FAX_MACHINES, type FaxActorInput, type FaxCommandMessage } from './messages'

export interface FaxKindOptions {
  /** Who transmits (the sandbox carrier; a live carrier when one exists). */
  carrier: FaxCarrier
}

type Args = { context: unknown }
const ownerOf = (a: Args) => (a.context as FaxContext & { runtime: FaxActorInput['runtime'] }).runtime.owner

export function createFaxKind(opts: FaxKindOptions) {
  const kind = defineActorKind({
    kind: FAX_KIND,
    machines: FAX_MACHINES,
    actions: (fx: Effects) => ({
      transmit: (_: Args, t: FaxTransmission) => {
        for (const n of opts.carrier.send(t)) fx.schedule({ name: n.name, at: n.at, event: n.event })
      },
      transmitCancel: () => {
        for (const name of opts.carrier.noticeNames) fx.cancelTimer(name)
      },
      project: (_: Args, p: FaxProjection) => {
        const c = p.context
        fx.write((tx) =>
          projectFax(tx, c.fax_id, {
            status: p.status,
            pages_sent: c.pages_sent,
            transport: c.transport,
            error_code: c.error_code,
            updated_at: c.updated_at,
            completed_at: c.completed_at,
          }),
        )
      },
      finished: (args: Args, o: FaxOutcome) => {
        const owner = ownerOf(args)
        const { type, ...data } = o
        fx.emit({ platformId: owner.platformId, accountId: owner.accountId, mode: owner.mode, type, data })
      },
    }),
    commands: {
      admit: (m: FaxCommandMessage, snapshot) => {
        if (!snapshot) return { refused: { code: 'fax_invalid_state', reason: 'the fax has finished' } }
        const a = admitFax(snapshot as FaxSnapshot, m.command, m.at)
        return 'refused' in a ? { refused: { code: a.refused.code, reason: a.refused.reason } } : { event: a.event }
      },
      outcome: () => [],
    },
  })
  return { kind }
}
