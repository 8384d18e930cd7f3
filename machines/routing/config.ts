// The routing configuration of one account, as the router reads it. The database
// rows map onto `RoutingInput` (arrays of plain records); `buildRoutingConfig`
// indexes them once so that `route()` answers with map lookups only.

/** Kinds of routing target (spec "Routing targets", plus queue and extension). */
export type TargetType = 'user' | 'ring_group' | 'queue' | 'dial_plan' | 'voicemail_box' | 'voice_app' | 'extension'
export const TARGET_TYPES: readonly TargetType[] = ['user', 'ring_group', 'queue', 'dial_plan', 'voicemail_box', 'voice_app', 'extension']

/** A reference to a routing object of the same account; for `extension` the id is the extension number. */
export interface Target {
  type: TargetType
  id: string
}

export type Presence = 'available' | 'on_call' | 'dnd' | 'away' | 'offline'

export interface RoutingUser {
  id: string
  /** Only `dnd` changes routing: a dnd user is never rung. Offline users are still rung (a simulated call has no registered device either). */
  presence: Presence
  /** Ring time when the user is the target itself (not as a ring group or queue member); default `defaults.ringSeconds`. */
  ringSeconds?: number
  /** The user has a personal voicemail box: an unanswered direct call goes there. */
  voicemail: boolean
}

export type RingStrategy = 'simultaneous' | 'sequential'

export interface RingGroupMember {
  user: string
  /** Sequential strategy only: this member's ring time; default the group's `ringSeconds`. */
  ringSeconds?: number
}

export interface RingGroup {
  id: string
  strategy: RingStrategy
  members: readonly RingGroupMember[]
  /** Simultaneous: how long everyone rings. Sequential: the default per member. */
  ringSeconds: number
  /** Where an unanswered call goes next; none: the call ends no-answer. */
  noAnswerTarget?: Target | null
}

export interface Queue {
  id: string
  name?: string
  /** Agents (user ids), in the order the queue dispatches them. */
  members: readonly string[]
  /** 0 means the spec's one-hour ceiling (QUEUE_MAX_WAIT_CEILING_SECONDS). */
  maxWaitSeconds: number
  /** Where a caller goes when max wait runs out; none: the call ends no-answer. */
  timeoutTarget?: Target | null
}

export const QUEUE_MAX_WAIT_CEILING_SECONDS = 3600

export type Weekday = 'mon' | 'tue' | 'wed' | 'thu' | 'fri' | 'sat' | 'sun'
export const WEEKDAYS: readonly Weekday[] = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun']

/** Open from `open` (inclusive) to `close` (exclusive), local wall-clock time "HH:MM"; `close` may be "24:00". An overnight span is two intervals. */
export interface OpenInterval {
  day: Weekday
  open: string
  close: string
}

export interface Schedule {
  id: string
  /** IANA time zone the hours and holidays are read in (the location's). */
  timeZone: string
  hours: readonly OpenInterval[]
  /** Local dates "YYYY-MM-DD" that are closed all day. */
  holidays: readonly string[]
  /** Set by POST /v1/schedules/{id}/hold: forces open or closed until cleared. */
  hold?: 'open' | 'closed' | null
}

export interface VoicemailBox {
  id: string
  greetingClip?: string | null
}

/** `webhook`: the call is delivered to the app's URL for programmatic control. `ai_agent`: an AI agent answers. */
export type VoiceApp = { id: string; kind: 'webhook' } | { id: string; kind: 'ai_agent'; agent: string }

export interface AiAgent {
  id: string
  name?: string
}

/** A node id inside the same dial plan. */
export type NodeId = string

export type DialPlanNode =
  /** Plays the prompt and reads one digit; an unlisted digit or no input takes `default` (none: hang up). */
  | { kind: 'menu'; prompt?: string | null; options: readonly { digit: string; next: NodeId }[]; default?: NodeId | null }
  | { kind: 'schedule'; schedule: string; open: NodeId; closed: NodeId }
  | { kind: 'play'; clip: string; next: NodeId }
  /** `control`: the app takes the call over (terminal). `notify`: the app is told by webhook and the plan goes on at `next`; an AI-agent app cannot be notified. */
  | { kind: 'voice_app'; app: string; mode: 'control' }
  | { kind: 'voice_app'; app: string; mode: 'notify'; next: NodeId }
  /** Leaves the dial plan for a routing target (which may be another dial plan). */
  | { kind: 'route'; target: Target }
  | { kind: 'hangup' }

export interface DialPlan {
  id: string
  entry: NodeId
  nodes: Readonly<Record<NodeId, DialPlanNode>>
}

export interface Extension {
  number: string
  target: Target
  status: 'active' | 'inactive'
}

/** Inbound routing of a number: a target, no target (rings every user of the account), or nothing (drops the call). */
export type NumberRouting = { mode: 'target'; target: Target } | { mode: 'ring_all' } | { mode: 'drop' }

export interface PhoneNumber {
  id: string
  /** E.164. */
  number: string
  routing: NumberRouting
}

export interface RoutingDefaults {
  /** Ring time of a direct user target and of "ring every user". */
  ringSeconds: number
}

/** What the database hands over: one array per routing object. */
export interface RoutingInput {
  defaults?: Partial<RoutingDefaults>
  users?: readonly RoutingUser[]
  extensions?: readonly Extension[]
  ringGroups?: readonly RingGroup[]
  queues?: readonly Queue[]
  dialPlans?: readonly DialPlan[]
  schedules?: readonly Schedule[]
  voicemailBoxes?: readonly VoicemailBox[]
  voiceApps?: readonly VoiceApp[]
  aiAgents?: readonly AiAgent[]
  phoneNumbers?: readonly PhoneNumber[]
}

/** The indexed form `route()` and `validateRouting()` read. Maps, not objects: ids are opaque and may be any string ("__proto__" too). */
export interface RoutingConfig {
  defaults: RoutingDefaults
  users: ReadonlyMap<string, RoutingUser>
  /** Users in account order, for "ring every user". */
  userOrder: readonly RoutingUser[]
  extensions: ReadonlyMap<string, Extension>
  ringGroups: ReadonlyMap<string, RingGroup>
  queues: ReadonlyMap<string, Queue>
  dialPlans: ReadonlyMap<string, DialPlan>
  schedules: ReadonlyMap<string, Schedule>
  voicemailBoxes: ReadonlyMap<string, VoicemailBox>
  voiceApps: ReadonlyMap<string, VoiceApp>
  aiAgents: ReadonlyMap<string, AiAgent>
  /** Keyed by E.164 number. */
  phoneNumbers: ReadonlyMap<string, PhoneNumber>
}

export const DEFAULT_RING_SECONDS = 30

function byKey<T>(items: readonly T[] | undefined, key: (item: T) => string): Map<string, T> {
  const map = new Map<string, T>()
  for (const item of items ?? []) map.set(key(item), item)
  return map
}

export function buildRoutingConfig(input: RoutingInput): RoutingConfig {
  const users = input.users ?? []
  return {
    defaults: { ringSeconds: input.defaults?.ringSeconds ?? DEFAULT_RING_SECONDS },
    users: byKey(users, (u) => u.id),
    userOrder: users,
    extensions: byKey(input.extensions, (e) => e.number),
    ringGroups: byKey(input.ringGroups, (g) => g.id),
    queues: byKey(input.queues, (q) => q.id),
    dialPlans: byKey(input.dialPlans, (d) => d.id),
    schedules: byKey(input.schedules, (s) => s.id),
    voicemailBoxes: byKey(input.voicemailBoxes, (b) => b.id),
    voiceApps: byKey(input.voiceApps, (a) => a.id),
    aiAgents: byKey(input.aiAgents, (a) => a.id),
    phoneNumbers: byKey(input.phoneNumbers, (n) => n.number),
  }
}

/** Own-property lookup in a dial plan's node table ("constructor" is not a node). */
export function nodeOf(plan: DialPlan, id: NodeId): DialPlanNode | undefined {
  return Object.hasOwn(plan.nodes, id) ? plan.nodes[id] : undefined
}
