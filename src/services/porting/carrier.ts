/**
 * The carrier side of porting, behind one interface (`PortingCarrier`), and the
 * sandbox carrier. The service asks it which numbers can be ported in (the
 * eligibility check); the port order actor hands it each submitted order and gets
 * back the carrier's answers as timed notices (written as the actor's durable
 * timers in the step that submitted, so a restart neither loses nor repeats one).
 * A live carrier driver would send the order in the same way and turn the carrier's
 * callbacks into those notices; this deployment has none (live keys: 502
 * carrier_unavailable).
 *
 * The sandbox carrier decides by the numbers themselves (documented in the API's
 * descriptions, like the call simulator's magic numbers). The "line" is the last four
 * digits of a +1 number:
 *   not portable   not a +1 NANP number, a number of the sandbox range +1500555xxxx,
 *                  a number live on this service, or a line 9900-9999
 *   wireless       line 7000-8999: is_wireless and account_number_required; an order
 *                  with one is rejected account_number_invalid without
 *                  subscriber.account_number and pin_required without subscriber.pin
 *   line 0001-0007 the first submission is rejected with address_mismatch,
 *                  account_number_invalid, name_mismatch, business_name_mismatch,
 *                  btn_mismatch, pin_required, pin_invalid (in that order); a corrected
 *                  resubmission goes through
 *   line 0008      the carrier never answers: the order stays submitted
 *   line 0009      FOC confirmed, the port never completes: the order stays foc
 *   otherwise      FOC confirmed 30 s after submission, ported 30 s later (simulated
 *                  time: VOICE_CLOCK_SPEED applies)
 */

// The shapes of machines/port-order.ts that the carrier sees, restated here: src/
// imports nothing above it (the machine's types match these structurally).
export type RejectionCode =
  | 'address_mismatch'
  | 'account_number_invalid'
  | 'name_mismatch'
  | 'business_name_mismatch'
  | 'btn_mismatch'
  | 'pin_required'
  | 'pin_invalid'
export interface CarrierOrderDetails {
  phone_numbers: string[]
  subscriber: { account_number: string | null; pin: string | null }
  requested_foc_date: string
  requested_foc_time: string | null
}
export interface CarrierSubmission {
  order_id: string
  details: CarrierOrderDetails
  /** 1 for the first submission, 2 after a corrected resubmission, ... */
  submission: number
  /** The authorization documents forwarded with it (the letter of authorization, the bill copy and CSR when uploaded). */
  documents: { type: 'loa' | 'bill_copy' | 'csr'; storage_key: string; sha256: string }[]
  at: string
}
export type CarrierEvent =
  | { type: 'CARRIER_FOC'; foc_date: string; foc_time: string | null; at: string }
  | { type: 'CARRIER_REJECTED'; code: RejectionCode; message: string; at: string }
  | { type: 'CARRIER_PORTED'; at: string }

export interface PortableNumber {
  phone_number: string
  losing_carrier_name: string
  losing_carrier_spid: string
  is_wireless: boolean
  account_number_required: boolean
}
export interface NonPortableNumber {
  phone_number: string
  rate_center: string | null
  city: string | null
  state: string | null
}
export interface Eligibility {
  portable_numbers: PortableNumber[]
  non_portable_numbers: NonPortableNumber[]
}

/** A carrier's answer, due at `at`: an event for the order's machine. */
export interface CarrierNotice {
  /** The actor's timer name (one live notice per name). */
  name: string
  at: string
  event: CarrierEvent
}

export interface PortingCarrier {
  /** Which numbers the carrier can port in; `live` holds the numbers already in service here. */
  eligibility(numbers: string[], live: ReadonlySet<string>): Eligibility
  /** Hands over a submitted order; answers what the carrier will report, and when. */
  submit(order: CarrierSubmission): CarrierNotice[]
  /** The names of the notices a withdrawn order drops. */
  readonly noticeNames: readonly string[]
}

export const SANDBOX_FOC_AFTER_SECONDS = 30
export const SANDBOX_PORT_AFTER_SECONDS = 30

const NANP = /^\+1([2-9]\d{2})([2-9]\d{2})(\d{4})$/
const lineOf = (n: string) => NANP.exec(n)?.[3]

/** The rejection each magic line 0001-0007 gives on the first submission. */
const MAGIC_REJECTIONS: Record<string, RejectionCode> = {
  '0001': 'address_mismatch',
  '0002': 'account_number_invalid',
  '0003': 'name_mismatch',
  '0004': 'business_name_mismatch',
  '0005': 'btn_mismatch',
  '0006': 'pin_required',
  '0007': 'pin_invalid',
}
const REJECTION_MESSAGES: Record<RejectionCode, string> = {
  address_mismatch: 'The service address does not match the losing carrier’s records.',
  account_number_invalid: 'The account number is missing or does not match the losing carrier’s records.',
  name_mismatch: 'The approver name does not match the losing carrier’s records.',
  business_name_mismatch: 'The business name does not match the losing carrier’s records: use the name on the CSR.',
  btn_mismatch: 'The billing telephone number (BTN) does not match the losing carrier’s records.',
  pin_required: 'The losing carrier requires a port-out PIN.',
  pin_invalid: 'The port-out PIN does not match the losing carrier’s records.',
}

const isWirelessLine = (line: string) => line >= '7000' && line <= '8999'

/** The order's sandbox outcome on this submission. */
export function sandboxOutcome(details: CarrierOrderDetails, submission: number): { reject: RejectionCode } | 'hold_submitted' | 'hold_foc' | 'port' {
  const lines = details.phone_numbers.map(lineOf).filter((l): l is string => l !== undefined)
  if (submission === 1) for (const l of lines) if (MAGIC_REJECTIONS[l]) return { reject: MAGIC_REJECTIONS[l]! }
  if (lines.some(isWirelessLine)) {
    if (!details.subscriber.account_number) return { reject: 'account_number_invalid' }
    if (!details.subscriber.pin) return { reject: 'pin_required' }
  }
  if (lines.includes('0008')) return 'hold_submitted'
  if (lines.includes('0009')) return 'hold_foc'
  return 'port'
}

const plus = (at: string, seconds: number) => new Date(Date.parse(at) + seconds * 1000).toISOString()

export function sandboxCarrier(): PortingCarrier {
  return {
    noticeNames: ['carrier_foc', 'carrier_ported', 'carrier_rejected'],
    eligibility(numbers, live) {
      const out: Eligibility = { portable_numbers: [], non_portable_numbers: [] }
      for (const n of numbers) {
        const m = NANP.exec(n)
        const line = m?.[3]
        if (!m || !line || n.startsWith('+1500555') || live.has(n) || line >= '9900') {
          out.non_portable_numbers.push({
            phone_number: n,
            rate_center: m ? `SANDBOX ${m[1]}-${m[2]}` : null,
            city: m ? 'Sandbox City' : null,
            state: m ? 'NY' : null,
          })
          continue
        }
        const wireless = isWirelessLine(line)
        out.portable_numbers.push({
          phone_number: n,
          losing_carrier_name: wireless ? 'Sandbox Wireless' : 'Sandbox Telecom',
          losing_carrier_spid: wireless ? '6529' : '0123',
          is_wireless: wireless,
          account_number_required: wireless,
        })
      }
      return out
    },
    submit(order) {
      const outcome = sandboxOutcome(order.details, order.submission)
      const focAt = plus(order.at, SANDBOX_FOC_AFTER_SECONDS)
      if (typeof outcome === 'object') {
        const code = outcome.reject
        return [{ name: 'carrier_rejected', at: focAt, event: { type: 'CARRIER_REJECTED', code, message: REJECTION_MESSAGES[code], at: focAt } }]
      }
      if (outcome === 'hold_submitted') return []
      const foc: CarrierNotice = {
        name: 'carrier_foc',
        at: focAt,
        event: { type: 'CARRIER_FOC', foc_date: order.details.requested_foc_date, foc_time: order.details.requested_foc_time ?? '12:00', at: focAt },
      }
      if (outcome === 'hold_foc') return [foc]
      const portAt = plus(focAt, SANDBOX_PORT_AFTER_SECONDS)
      return [foc, { name: 'carrier_ported', at: portAt, event: { type: 'CARRIER_PORTED', at: portAt } }]
    },
  }
}
