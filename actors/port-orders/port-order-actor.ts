/**
 * The port order actor (`port_order.v1`): binds machines/port-order.ts to effects,
 * all committed in the step's one transaction:
 *  - changed        → a line of the order's history and port_order.status_changed in
 *                     the outbox (with the rejection when it went to exception, the
 *                     firm date and time when it went to foc);
 *  - project        → the port_orders row;
 *  - carrierSubmit  → the carrier (PortingCarrier) takes the order; its answers become
 *                     this actor's durable timers, so a restart neither loses nor
 *                     repeats them;
 *  - carrierCancel  → the answers still due are cancelled;
 *  - activateNumbers → the ported numbers become active phone numbers of the account
 *                     (phone_number.activated on a live account, with the order).
 */
import type { PortOrderContext, PortOrderProjection, PortOrderSnapshot, PortOrderStatusChange, PortOrderSubmission } from '../../machines/port-order'
import type { Clock } from '../../src/clock'
import type { PortingCarrier } from '../../src/services/porting/carrier'
import { activatePortedNumbers, projectPortOrder, recordPortOrderStatus } from '../../src/services/porting/port-orders'
import { defineActorKind, type Effects } from '../runtime/kinds'
import { admitPortOrder, PORT_ORDER_KIND, PORT_ORDER_MACHINES, type PortOrderActorInput, type PortOrderCommandMessage } from './messages'

export interface PortOrderKindOptions {
  clock: Clock
  /** The carrier the orders go to (the sandbox carrier; a live driver when one exists). */
  carrier: PortingCarrier
}

type Args = { context: unknown }
const ownerOf = (a: Args) => (a.context as PortOrderContext & { runtime: PortOrderActorInput['runtime'] }).runtime.owner

export const PORT_ORDER_STATUS_CHANGED = 'port_order.status_changed'

export function createPortOrderKind(opts: PortOrderKindOptions) {
  const kind = defineActorKind({
    kind: PORT_ORDER_KIND,
    machines: PORT_ORDER_MACHINES,
    actions: (fx: Effects) => ({
      changed: (args: Args, c: PortOrderStatusChange) => {
        const owner = ownerOf(args)
        fx.emit({
          platformId: owner.platformId,
          accountId: owner.accountId,
          mode: owner.mode,
          type: PORT_ORDER_STATUS_CHANGED,
          data: {
            port_order: c.order_id,
            status: c.to,
            previous_status: c.from,
            ...(c.to === 'exception' ? { rejection: c.rejection } : {}),
            ...(c.to === 'foc' && c.foc ? { foc_date: c.foc.date, foc_time: c.foc.time } : {}),
            changed_at: c.at,
          },
        })
        fx.write((tx) =>
          recordPortOrderStatus(tx, {
            orderId: c.order_id,
            accountId: owner.accountId,
            from: c.from,
            to: c.to,
            rejection: c.to === 'exception' ? c.rejection : null,
            at: c.at,
          }),
        )
      },
      project: (_: Args, p: PortOrderProjection) => {
        const c = p.context
        fx.write((tx) => projectPortOrder(tx, c.order_id, { status: p.status, details: c.details, submitted_at: c.submitted_at, updated_at: c.updated_at }))
      },
      carrierSubmit: (_: Args, s: PortOrderSubmission) => {
        for (const n of opts.carrier.submit(s)) fx.schedule({ name: n.name, at: n.at, event: n.event })
      },
      carrierCancel: () => {
        for (const name of opts.carrier.noticeNames) fx.cancelTimer(name)
      },
      activateNumbers: (_: Args, p: { order_id: string; phone_numbers: string[]; at: string }) => {
        fx.write((tx) => activatePortedNumbers(tx, opts.clock, { orderId: p.order_id, numbers: p.phone_numbers, at: p.at }))
      },
    }),
    commands: {
      admit: (m: PortOrderCommandMessage, snapshot) => {
        if (!snapshot) return { refused: { code: 'port_order_invalid_state', reason: 'the port order has finished' } }
        const a = admitPortOrder(snapshot as PortOrderSnapshot, m.command, m.at)
        return 'refused' in a ? { refused: { code: a.refused.code, reason: a.refused.reason } } : { event: a.event }
      },
      outcome: () => [],
    },
  })
  return { kind }
}
