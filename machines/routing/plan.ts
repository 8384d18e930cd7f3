// What `route()` answers: the steps a call goes through, in order.
import type { Target } from './config'

/** The routing object a step comes from, for the route preview and for events (`queue`, `user_id`). */
export interface StepSource {
  type: Target['type'] | 'phone_number'
  id: string
  /** The dial plan node, when the step comes from a dial plan. */
  node?: string
}

export type HangupReason =
  /** The number routes to nothing. */
  | 'dropped'
  /** Everything tried went unanswered and nothing further is configured. */
  | 'no_answer'
  /** A dial plan hangup node, or a menu with no input and no default. */
  | 'hangup_node'
  /** The dialled number or extension is not in the account, or a reference is missing (a config that skipped validation). */
  | 'unknown_destination'
  | 'inactive_extension'
  /** Defensive: the path came back to an object it already went through (validation refuses such configs). */
  | 'loop'

export type VoicemailOwner = { type: 'user'; id: string } | { type: 'shared'; id: string }

/** Steps after which the plan goes on when they end unanswered (ring timeout, queue max wait) or at once (play, notify, menu). */
export type ContinuingStep =
  /** Ring every device of these users at once, for `timeoutSeconds`. A sequential ring group is one such step per member. */
  | { kind: 'ring'; users: readonly string[]; timeoutSeconds: number; source: StepSource }
  /** Wait in the queue (its own actor dispatches to `agents`) up to `maxWaitSeconds`. */
  | { kind: 'enqueue'; queue: string; agents: readonly string[]; maxWaitSeconds: number; source: StepSource }
  | { kind: 'play'; clip: string; source: StepSource }
  /** Tell a voice app by webhook; the call does not wait for it. */
  | { kind: 'notify'; app: string; source: StepSource }
  /** A menu whose digit the call already carries (`call.digits`); null: no input or an unlisted digit, the default branch. */
  | { kind: 'menu'; prompt: string | null; digit: string | null; source: StepSource }

/** Steps that end the plan: exactly one, always last. */
export type FinalStep =
  | { kind: 'voicemail'; box: VoicemailOwner; source: StepSource }
  | { kind: 'voice_app'; app: string; source: StepSource }
  | { kind: 'ai_agent'; agent: string; app: string; source: StepSource }
  | { kind: 'hangup'; reason: HangupReason; source?: StepSource }
  /**
   * A menu waiting for the caller's digit: play `prompt`, read a digit, then route
   * again with `{ entry: { type: 'node', dialPlan, node }, digits: [digit] }`
   * (`digits: [null]` on no input).
   */
  | { kind: 'gather'; prompt: string | null; dialPlan: string; node: string; options: readonly string[]; source: StepSource }

export type Step = ContinuingStep | FinalStep

export interface Plan {
  steps: Step[]
}

export const FINAL_KINDS: ReadonlySet<Step['kind']> = new Set(['voicemail', 'voice_app', 'ai_agent', 'hangup', 'gather'])
