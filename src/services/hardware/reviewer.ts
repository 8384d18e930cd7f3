/**
 * Who reviews and delivers hardware orders, behind one interface
 * (`HardwareReviewer`), and the sandbox reviewer. The hardware order actor hands it
 * each new order and gets back the reviewer's and the carrier's answers as timed
 * notices, written as the actor's durable timers in the step that created the order
 * (so a restart neither loses nor repeats one). Live accounts have no supplier in
 * this deployment (502 hardware_supplier_unavailable when ordering).
 *
 * The sandbox reviewer decides by the order's `reference` (case-insensitive,
 * documented in the API's descriptions like the call simulator's magic numbers):
 *   SANDBOX-REJECT          rejected at review, rejection_reason SANDBOX_REJECTION_REASON
 *   SANDBOX-HOLD-REVIEW     never reviewed: the order stays submitted
 *   SANDBOX-HOLD-DELIVERY   approved, never delivered: the order stays approved
 *   anything else (or none) approved 30 s after creation, delivered (fulfilled) 60 s
 *                           after approval (simulated time: VOICE_CLOCK_SPEED applies)
 */

export type ReviewerEvent =
  | { type: 'REVIEW_APPROVED'; at: string }
  | { type: 'REVIEW_REJECTED'; reason: string; at: string }
  | { type: 'DELIVERED'; at: string }

/** An answer due at `at`: an event for the order's machine. */
export interface ReviewerNotice {
  /** The actor's timer name (one live notice per name). */
  name: string
  at: string
  event: ReviewerEvent
}

export interface HardwareReviewer {
  /** Takes a new order; answers what the reviewer and delivery will report, and when. */
  review(order: { order_id: string; reference: string | null; at: string }): ReviewerNotice[]
  /** The names of the notices a cancelled order drops. */
  readonly noticeNames: readonly string[]
}

export const SANDBOX_REVIEW_AFTER_SECONDS = 30
export const SANDBOX_DELIVERY_AFTER_SECONDS = 60
export const SANDBOX_REFERENCES = { reject: 'SANDBOX-REJECT', holdReview: 'SANDBOX-HOLD-REVIEW', holdDelivery: 'SANDBOX-HOLD-DELIVERY' } as const
export const SANDBOX_REJECTION_REASON = 'Declined at review: the sandbox reviewer rejects orders with the reference SANDBOX-REJECT.'

const plus = (at: string, seconds: number) => new Date(Date.parse(at) + seconds * 1000).toISOString()

export function sandboxReviewer(): HardwareReviewer {
  return {
    noticeNames: ['review', 'delivery'],
    review(order) {
      const ref = order.reference?.trim().toUpperCase() ?? ''
      const reviewAt = plus(order.at, SANDBOX_REVIEW_AFTER_SECONDS)
      if (ref === SANDBOX_REFERENCES.holdReview) return []
      if (ref === SANDBOX_REFERENCES.reject) {
        return [{ name: 'review', at: reviewAt, event: { type: 'REVIEW_REJECTED', reason: SANDBOX_REJECTION_REASON, at: reviewAt } }]
      }
      const approved: ReviewerNotice = { name: 'review', at: reviewAt, event: { type: 'REVIEW_APPROVED', at: reviewAt } }
      if (ref === SANDBOX_REFERENCES.holdDelivery) return [approved]
      const deliverAt = plus(reviewAt, SANDBOX_DELIVERY_AFTER_SECONDS)
      return [approved, { name: 'delivery', at: deliverAt, event: { type: 'DELIVERED', at: deliverAt } }]
    },
  }
}
