/**
 * Who transmits outbound faxes, behind one interface (`FaxCarrier`), and the sandbox
 * carrier. The fax actor hands it each new fax and gets back the carrier's answers as
 * timed notices, written as the actor's durable timers in the step that started the
 * fax (so a restart neither loses nor repeats one). Live accounts have no fax carrier
 * in this deployment (502 fax_carrier_unavailable when sending).
 *
 * The sandbox carrier decides by the destination (digits matched; documented in the
 * API's descriptions like the call simulator's magic numbers). Times are simulated
 * (VOICE_CLOCK_SPEED applies); a page takes SANDBOX_SECONDS_PER_PAGE:
 *   +15005550200  busy: fax.failed dial_busy after 5 s, pages null, transport null
 *   +15005550201  no answer: fax.failed dial_no_answer after 45 s, pages null
 *   +15005550202  answered, negotiation fails: fax.failed fax_failed, pages 0 (t38)
 *   +15005550203  the line drops during the last page: fax.failed fax_failed, pages N-1 (g711)
 *   +15005550204  busy on all 3 attempts (60 s apart): fax.failed max_attempts_exceeded, pages null
 *   +15005550205  delivered over G.711 (the far end has no T.38)
 *   +15005550206  rings for an hour: fax.failed dial_no_answer after 3600 s, pages null (time to cancel one in flight)
 *   anything else delivered over T.38: dialled after 5 s, then one page per 10 s
 */

/** The carrier's answers: events for the fax's machine (machines/fax.ts FaxEvent). */
export type FaxCarrierEvent =
  | { type: 'DIALLED'; transport: 't38' | 'g711'; at: string }
  | { type: 'DELIVERED'; at: string }
  | {
      type: 'FAILED'
      error_code: 'dial_busy' | 'dial_no_answer' | 'max_attempts_exceeded' | 'fax_failed'
      pages_sent: number | null
      transport: 't38' | 'g711' | null
      at: string
    }

/** The fax as the carrier gets it (machines/fax.ts FaxTransmission). */
export interface FaxTransmission {
  fax_id: string
  to_number: string
  pages: number
  at: string
}

/** An answer due at `at`: an event for the fax's machine. */
export interface FaxCarrierNotice {
  /** The actor's timer name (one live notice per name). */
  name: string
  at: string
  event: FaxCarrierEvent
}

export interface FaxCarrier {
  /** Takes a new fax; answers what the carrier will report, and when. */
  send(fax: FaxTransmission): FaxCarrierNotice[]
  /** The names of the notices a cancelled fax drops. */
  readonly noticeNames: readonly string[]
}

export const SANDBOX_DIAL_SECONDS = 5
export const SANDBOX_SECONDS_PER_PAGE = 10
export const SANDBOX_FAX_NUMBERS = {
  busy: '+15005550200',
  noAnswer: '+15005550201',
  failBeforeFirstPage: '+15005550202',
  failOnLastPage: '+15005550203',
  maxAttempts: '+15005550204',
  g711: '+15005550205',
  ringsAnHour: '+15005550206',
} as const

const plus = (at: string, seconds: number) => new Date(Date.parse(at) + seconds * 1000).toISOString()

export function sandboxFaxCarrier(): FaxCarrier {
  return {
    noticeNames: ['dial', 'result'],
    send(fax) {
      const digits = `+${fax.to_number.replace(/\D/g, '')}`
      const dialAt = plus(fax.at, SANDBOX_DIAL_SECONDS)
      const fail = (
        at: string,
        error_code: Extract<FaxCarrierEvent, { type: 'FAILED' }>['error_code'],
        pages_sent: number | null,
        transport: 't38' | 'g711' | null,
      ) => ({
        name: 'result',
        at,
        event: { type: 'FAILED' as const, error_code, pages_sent, transport, at },
      })
      const dialled = (transport: 't38' | 'g711'): FaxCarrierNotice => ({ name: 'dial', at: dialAt, event: { type: 'DIALLED', transport, at: dialAt } })
      switch (digits) {
        case SANDBOX_FAX_NUMBERS.busy:
          return [fail(dialAt, 'dial_busy', null, null)]
        case SANDBOX_FAX_NUMBERS.noAnswer:
          return [fail(plus(fax.at, 45), 'dial_no_answer', null, null)]
        case SANDBOX_FAX_NUMBERS.ringsAnHour:
          return [fail(plus(fax.at, 3600), 'dial_no_answer', null, null)]
        case SANDBOX_FAX_NUMBERS.maxAttempts:
          return [fail(plus(dialAt, 120), 'max_attempts_exceeded', null, null)]
        case SANDBOX_FAX_NUMBERS.failBeforeFirstPage:
          return [dialled('t38'), fail(plus(dialAt, SANDBOX_DIAL_SECONDS), 'fax_failed', 0, 't38')]
        case SANDBOX_FAX_NUMBERS.failOnLastPage:
          return [dialled('g711'), fail(plus(dialAt, fax.pages * SANDBOX_SECONDS_PER_PAGE), 'fax_failed', fax.pages - 1, 'g711')]
      }
      const transport = digits === SANDBOX_FAX_NUMBERS.g711 ? 'g711' : 't38'
      const doneAt = plus(dialAt, fax.pages * SANDBOX_SECONDS_PER_PAGE)
      return [dialled(transport), { name: 'result', at: doneAt, event: { type: 'DELIVERED', at: doneAt } }]
    },
  }
}
