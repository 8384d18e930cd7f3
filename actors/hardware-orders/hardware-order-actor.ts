/**
 * The hardware order actor (`hardware_order.v1`): binds machines/hardware-order.ts
 * to effects, all committed in the step's one transaction:
 *  - review        → the reviewer (HardwareReviewer) takes the new order; its answers
 *                    (approved or rejected, then delivered) become this actor's
 *                    durable timers, so a restart neither loses nor repeats them;
 *  - reviewCancel  → the answers still due are cancelled;
 *  - project       → the hardware_orders row;
 *  - fulfil        → the delivered phones become devices of the account (with their
 *                    own device actors, spawned in the same transaction).
 * The spec names no hardware order events, so none is emitted.
 */
import type { Clock } from '../../src/clock'
import type { HardwareOrderProjection, HardwareOrderReview, HardwareOrderSnapshot } from '../../machines/hardware-order'
import { fulfilHardwareOrder, projectHardwareOrder } from '../../src/services/hardware/hardware-orders'
import type { HardwareReviewer } from '../../src/services/hardware/reviewer'
import { durableActorMessages } from '../runtime/commands'
import { defineActorKind, type Effects } from '../runtime/kinds'
import { admitHardwareOrder, HARDWARE_ORDER_KIND, HARDWARE_ORDER_MACHINES, type HardwareOrderCommandMessage } from './messages'

export interface HardwareOrderKindOptions {
  clock: Clock
  /** Who reviews and delivers (the sandbox reviewer; a live supplier when one exists). */
  reviewer: HardwareReviewer
}

type Args = { context: unknown }

export function createHardwareOrderKind(opts: HardwareOrderKindOptions) {
  const messages = durableActorMessages(opts.clock)
  const kind = defineActorKind({
    kind: HARDWARE_ORDER_KIND,
    machines: HARDWARE_ORDER_MACHINES,
    actions: (fx: Effects) => ({
      review: (_: Args, r: HardwareOrderReview) => {
        for (const n of opts.reviewer.review(r)) fx.schedule({ name: n.name, at: n.at, event: n.event })
      },
      reviewCancel: () => {
        for (const name of opts.reviewer.noticeNames) fx.cancelTimer(name)
      },
      project: (_: Args, p: HardwareOrderProjection) => {
        const c = p.context
        fx.write((tx) =>
          projectHardwareOrder(tx, c.order_id, { status: p.status, items: c.items, rejection_reason: c.rejection_reason, updated_at: c.updated_at }),
        )
      },
      fulfil: (_: Args, f: { order_id: string }) => {
        fx.write((tx) => fulfilHardwareOrder(tx, { clock: opts.clock, actorMessages: messages }, f.order_id))
      },
    }),
    commands: {
      admit: (m: HardwareOrderCommandMessage, snapshot) => {
        if (!snapshot) return { refused: { code: 'hardware_order_invalid_state', reason: 'the hardware order has finished' } }
        const a = admitHardwareOrder(snapshot as HardwareOrderSnapshot, m.command, m.at)
        return 'refused' in a ? { refused: { code: a.refused.code, reason: a.refused.reason } } : { event: a.event }
      },
      outcome: () => [],
    },
  })
  return { kind }
}
