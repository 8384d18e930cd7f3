/** Call routing: extensions (ring groups, queues, dial plans... join here). */
import { Body, DateTime, E164_PATTERN, Expanded, Id, Nullable, T } from './common'

export const Extension = T.Object({
  id: T.String(),
  object: T.Literal('extension'),
  account: T.String(),
  number: T.String(),
  target: T.String(),
  status: T.Union([T.Literal('active'), T.Literal('inactive')]),
  created_at: DateTime(),
  updated_at: DateTime(),
})

export const CreateExtensionRequest = Body({
  number: T.String({ pattern: '^[0-9]{1,10}$', description: 'dial code; its length must equal config.extension_length' }),
  target: Id('routing target ID (user, voice app, dial plan, ring group, shared voicemail box or queue)'),
  status: T.Optional(T.Union([T.Literal('active'), T.Literal('inactive')])),
})

export const UpdateExtensionRequest = Body({
  target: T.Optional(Id()),
  status: T.Optional(T.Union([T.Literal('active'), T.Literal('inactive')])),
})

// ---------------------------------------------------------------- routing objects
// Targets are bare routing ids (spec "Routing targets"): a user, ring group, queue,
// dial plan, shared voicemail box or voice app of the same account.

const TargetId = (description: string) =>
  Id(`${description}: routing target ID (user, ring group, queue, dial plan, shared voicemail box or voice app) of this account`)
const Seconds = (description: string) => T.Integer({ minimum: 1, maximum: 600, description })
const Name = () => T.String({ minLength: 1, maxLength: 255 })
const Stamps = { created_at: DateTime(), updated_at: DateTime() }
export const DeletedRoutingObject = (object: string) => T.Object({ id: T.String(), object: T.Literal(object), deleted: T.Literal(true) })

export const RingGroupMember = T.Object(
  {
    id: T.String(),
    object: T.Literal('ring_group_member'),
    ring_group: T.String(),
    user: T.String(),
    ring_seconds: Nullable(T.Integer({ description: 'sequential strategy: how long this member rings; null: the group ring_seconds' })),
  },
  { title: 'RingGroupMember' },
)

export const RingGroup = T.Object(
  {
    id: T.String(),
    object: T.Literal('ring_group'),
    account: T.String(),
    name: T.String(),
    strategy: T.Union([T.Literal('simultaneous'), T.Literal('sequential')], {
      description: 'simultaneous: every member rings at once for ring_seconds; sequential: one member at a time, in order, each for its own ring_seconds',
    }),
    ring_seconds: T.Integer({ description: 'simultaneous: ring time of the group; sequential: default per member' }),
    no_answer_target: Nullable(T.String({ description: 'where an unanswered call goes next; null: the call ends no-answer' })),
    member_count: T.Integer(),
    members: T.Optional(Expanded(RingGroupMember)),
    ...Stamps,
  },
  { title: 'RingGroup', description: 'Members are inlined with expand[]=members.' },
)

const MemberInput = Body({
  user: Id('a user of this account'),
  ring_seconds: T.Optional(Nullable(Seconds('sequential strategy: this member’s ring time (1-600); default the group ring_seconds'))),
})
export const AddRingGroupMemberRequest = MemberInput

const ringGroupFields = {
  strategy: T.Optional(T.Union([T.Literal('simultaneous'), T.Literal('sequential')], { description: 'default simultaneous' })),
  ring_seconds: T.Optional(Seconds('1-600, default 30')),
  no_answer_target: T.Optional(Nullable(TargetId('where an unanswered call goes'))),
  members: T.Optional(T.Array(MemberInput, { maxItems: 100, description: 'users in ring order; on update, replaces the whole list' })),
}
export const CreateRingGroupRequest = Body({ name: Name(), ...ringGroupFields })
export const UpdateRingGroupRequest = Body({ name: T.Optional(Name()), ...ringGroupFields })

const Weekday = T.Union(['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].map((d) => T.Literal(d)))
const Clock = (description: string) => T.String({ pattern: '^([01][0-9]|2[0-4]):[0-5][0-9]$', description })
const OpenInterval = T.Object(
  {
    day: Weekday,
    open: Clock('local time HH:MM the span opens (inclusive)'),
    close: Clock('local time HH:MM the span closes (exclusive), after open; may be 24:00'),
  },
  { additionalProperties: false, description: 'An overnight span is two intervals, one per day.' },
)
const Hours = T.Array(OpenInterval, { maxItems: 100, description: 'weekly open hours, local to time_zone; outside them the schedule is closed' })
const Holidays = T.Array(T.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$' }), { maxItems: 366, description: 'local dates (YYYY-MM-DD) closed all day' })
const TimeZone = () => T.String({ minLength: 1, maxLength: 64, description: 'IANA time zone the hours and holidays are read in, e.g. America/New_York' })

export const Schedule = T.Object(
  {
    id: T.String(),
    object: T.Literal('schedule'),
    account: T.String(),
    name: T.String(),
    time_zone: T.String(),
    hours: T.Array(T.Object({ day: Weekday, open: T.String(), close: T.String() })),
    holidays: T.Array(T.String()),
    hold: Nullable(
      T.Union([T.Literal('open'), T.Literal('closed')], { description: 'set by POST .../hold: forces the schedule open or closed until DELETE .../hold' }),
    ),
    ...Stamps,
  },
  { title: 'Schedule' },
)

export const CreateScheduleRequest = Body({ name: Name(), time_zone: T.Optional(TimeZone()), hours: T.Optional(Hours), holidays: T.Optional(Holidays) })
export const UpdateScheduleRequest = Body({
  name: T.Optional(Name()),
  time_zone: T.Optional(TimeZone()),
  hours: T.Optional(Hours),
  holidays: T.Optional(Holidays),
})
export const ScheduleHoldRequest = Body({ hold: T.Union([T.Literal('open'), T.Literal('closed')], { description: 'open or closed until cleared' }) })

const NodeRef = (description: string) => T.String({ minLength: 1, maxLength: 64, description: `${description}: a node id of this dial plan` })
const ClipId = (description: string) => Id(`${description}: audio clip ID`)
const DialPlanNode = T.Union(
  [
    T.Object(
      {
        kind: T.Literal('menu'),
        prompt: T.Optional(Nullable(ClipId('played before reading one digit'))),
        options: T.Array(T.Object({ digit: T.String({ pattern: '^[0-9*#]$' }), next: NodeRef('where this digit goes') }, { additionalProperties: false }), {
          maxItems: 12,
        }),
        default: T.Optional(Nullable(NodeRef('on no input or an unlisted digit; none: hang up'))),
      },
      { additionalProperties: false, title: 'MenuNode' },
    ),
    T.Object(
      {
        kind: T.Literal('schedule'),
        schedule: Id('schedule ID of this account'),
        open: NodeRef('while the schedule is open'),
        closed: NodeRef('while it is closed'),
      },
      { additionalProperties: false, title: 'ScheduleNode' },
    ),
    T.Object({ kind: T.Literal('play'), clip: ClipId('played'), next: NodeRef('then') }, { additionalProperties: false, title: 'PlayNode' }),
    T.Object(
      {
        kind: T.Literal('voice_app'),
        app: Id('voice app ID of this account'),
        mode: T.Union([T.Literal('control'), T.Literal('notify')], {
          description:
            'control: the app takes the call (ends the plan); notify: the app is told by webhook and the plan goes on at next. An AI-agent voice app cannot be notified.',
        }),
        next: T.Optional(Nullable(NodeRef('notify mode only: where the plan goes on'))),
      },
      { additionalProperties: false, title: 'VoiceAppNode' },
    ),
    T.Object({ kind: T.Literal('route'), target: TargetId('leaves the plan for') }, { additionalProperties: false, title: 'RouteNode' }),
    T.Object({ kind: T.Literal('hangup') }, { additionalProperties: false, title: 'HangupNode' }),
  ],
  { description: 'one step of the plan, by kind' },
)
const Nodes = T.Record(T.String({ pattern: '^[A-Za-z0-9_-]{1,64}$' }), DialPlanNode, {
  maxProperties: 200,
  description: 'the plan’s nodes by id (letters, digits, _ and -, up to 64)',
})

export const DialPlan = T.Object(
  {
    id: T.String(),
    object: T.Literal('dial_plan'),
    account: T.String(),
    name: T.String(),
    entry: T.String({ description: 'the node a call starts at' }),
    nodes: T.Record(T.String(), DialPlanNode),
    extensions: T.Optional(Expanded(Extension)),
    ...Stamps,
  },
  { title: 'DialPlan', description: 'expand[]=extensions inlines the extensions routing to the plan.' },
)
export const CreateDialPlanRequest = Body({ name: Name(), entry: NodeRef('the node a call starts at'), nodes: Nodes })
export const UpdateDialPlanRequest = Body({ name: T.Optional(Name()), entry: T.Optional(NodeRef('the node a call starts at')), nodes: T.Optional(Nodes) })

export const SharedVoicemailBox = T.Object(
  {
    id: T.String(),
    object: T.Literal('shared_voicemail_box'),
    account: T.String(),
    name: T.String(),
    users: T.Array(T.String(), { description: 'users who may hear the box’s messages' }),
    extensions: T.Optional(Expanded(Extension)),
    ...Stamps,
  },
  { title: 'SharedVoicemailBox', description: 'expand[]=extensions inlines the extensions routing to the box.' },
)
const BoxUsers = T.Array(Id('a user of this account'), { maxItems: 100, description: 'users who may hear the box’s messages; on update, replaces the list' })
export const CreateSharedVoicemailBoxRequest = Body({ name: Name(), users: T.Optional(BoxUsers) })
export const UpdateSharedVoicemailBoxRequest = Body({ name: T.Optional(Name()), users: T.Optional(BoxUsers) })

export const AiAgent = T.Object(
  {
    id: T.String(),
    object: T.Literal('ai_agent'),
    account: T.String(),
    name: T.String(),
    instructions: T.String({ description: 'what the agent is told to do on a call' }),
    greeting: Nullable(T.String({ description: 'said when the agent answers; null: the agent opens by itself' })),
    ...Stamps,
  },
  { title: 'AiAgent', description: 'An agent answers the calls routed to an ai_agent voice app naming it.' },
)
const Instructions = () => T.String({ minLength: 1, maxLength: 10000 })
const Greeting = () => Nullable(T.String({ minLength: 1, maxLength: 1000 }))
export const CreateAiAgentRequest = Body({ name: Name(), instructions: Instructions(), greeting: T.Optional(Greeting()) })
export const UpdateAiAgentRequest = Body({ name: T.Optional(Name()), instructions: T.Optional(Instructions()), greeting: T.Optional(Greeting()) })

const VoiceAppKind = T.Union([T.Literal('webhook'), T.Literal('ai_agent')], {
  description: 'webhook: calls are delivered to url for programmatic control; ai_agent: the named AI agent answers',
})
export const VoiceApp = T.Object(
  {
    id: T.String(),
    object: T.Literal('voice_app'),
    account: T.String(),
    name: T.String(),
    kind: VoiceAppKind,
    url: Nullable(T.String({ description: 'webhook apps: where the events of the calls the app takes go, signed with the app’s secret' })),
    ai_agent: Nullable(T.String({ description: 'ai_agent apps: the AI agent that answers' })),
    secret: T.Optional(T.String({ description: 'signs the app’s webhooks; returned only by create and rotate_secret' })),
    extensions: T.Optional(Expanded(Extension)),
    ...Stamps,
  },
  {
    title: 'VoiceApp',
    description:
      'A routing target that hands the call to a program. A webhook app answers the calls routed to it (call.answered with answered_at and connected_at null; the call ends completed) and receives each such call’s call.* events from then on, POSTed to `url` with the same envelope and X-Service-Signature scheme as webhook endpoints but signed with the app’s own `secret`, with the same retries; it controls the call with POST /v1/calls/{id} (hangup, or a blind transfer; other actions answer 409 call_not_active). A notify-mode voice_app dial plan node makes the app follow the call from that point (its later call.* events) while the plan goes on. An ai_agent app lets the named AI agent answer; the call log’s summary names the agent. expand[]=extensions inlines the extensions routing to the app.',
  },
)
const AppUrl = () => Nullable(T.String({ minLength: 1, maxLength: 2048, description: 'webhook apps: http or https URL' }))
export const CreateVoiceAppRequest = Body({
  name: Name(),
  kind: VoiceAppKind,
  url: T.Optional(AppUrl()),
  ai_agent: T.Optional(Nullable(Id('ai_agent apps: AI agent ID of this account'))),
})
export const UpdateVoiceAppRequest = Body({
  name: T.Optional(Name()),
  kind: T.Optional(VoiceAppKind),
  url: T.Optional(AppUrl()),
  ai_agent: T.Optional(Nullable(Id('ai_agent apps: AI agent ID of this account'))),
})

export const QueueMember = T.Object(
  { id: T.String(), object: T.Literal('queue_member'), queue: T.String(), user: T.String(), created_at: DateTime() },
  { title: 'QueueMember', description: 'An agent of the queue; agents are offered calls in the order they were added.' },
)
export const Queue = T.Object(
  {
    id: T.String(),
    object: T.Literal('queue'),
    account: T.String(),
    name: T.String(),
    max_wait_seconds: T.Integer({
      description: 'how long a caller waits before the timeout target; 0: the one-hour ceiling. A ring in progress finishes first.',
    }),
    timeout_target: Nullable(T.String({ description: 'where a caller goes when max wait runs out; null: the call ends no-answer' })),
    members: T.Optional(Expanded(QueueMember)),
    ...Stamps,
  },
  { title: 'Queue', description: 'expand[]=members inlines the members in dispatch order.' },
)
const queueFields = {
  max_wait_seconds: T.Optional(T.Integer({ minimum: 0, maximum: 3600, description: '0 to 3600; 0 (default): the one-hour ceiling' })),
  timeout_target: T.Optional(Nullable(TargetId('where a caller goes when max wait runs out'))),
}
export const CreateQueueRequest = Body({ name: Name(), ...queueFields })
export const UpdateQueueRequest = Body({ name: T.Optional(Name()), ...queueFields })
export const AddQueueMemberRequest = Body({ user: Id('a user of this account') })
export const QueueAgent = T.Object(
  {
    object: T.Literal('queue_agent'),
    user: T.String(),
    status: T.Union([T.Literal('available'), T.Literal('unavailable')], { description: 'unavailable: no queue dispatches calls to the user' }),
    queues: T.Array(T.String(), { description: 'the queues the user is a member of' }),
    updated_at: Nullable(DateTime()),
  },
  { title: 'QueueAgent', description: 'A user’s standing as a queue agent; available until set otherwise (updated_at null).' },
)
export const UpdateQueueAgentRequest = Body({ status: T.Union([T.Literal('available'), T.Literal('unavailable')]) })

const RouteMode = T.Union([T.Literal('target'), T.Literal('ring_all'), T.Literal('drop')], {
  description:
    'target: calls go to target; ring_all: no target, every user of the account rings (the default); drop: route to nothing, inbound calls are dropped',
})
export const PhoneNumberRoute = T.Object(
  {
    object: T.Literal('phone_number_route'),
    phone_number: T.String({ description: 'phone number ID' }),
    number: T.String({ description: 'E.164' }),
    mode: RouteMode,
    target: Nullable(T.String({ description: 'mode target: the routing target' })),
    updated_at: Nullable(DateTime()),
  },
  { title: 'PhoneNumberRoute', description: 'Inbound routing of a number.' },
)
export const SetPhoneNumberRouteRequest = Body({
  target: T.Optional(Nullable(TargetId('where inbound calls go'))),
  mode: T.Optional(RouteMode),
})

// ---------------------------------------------------------------- route preview and routed sandbox calls (extensions beyond the spec)

const StepSource = T.Object(
  {
    type: T.String({ description: 'phone_number, extension, user, ring_group, queue, dial_plan, voicemail_box or voice_app' }),
    id: T.String({ description: 'the object’s ID (for an extension, its number)' }),
    node: T.Optional(T.String({ description: 'the dial plan node, for a step of a dial plan' })),
  },
  { title: 'RouteStepSource', description: 'The routing object the step comes from.' },
)
export const RouteStep = T.Object(
  {
    kind: T.Union(
      ['ring', 'enqueue', 'play', 'notify', 'menu', 'voicemail', 'voice_app', 'ai_agent', 'hangup', 'gather'].map((k) => T.Literal(k)),
      {
        description:
          'ring: these users’ devices at once for timeout_seconds (a sequential ring group is one ring step per member); enqueue: wait in queue (agents ring) up to max_wait_seconds; play: a clip; notify: a notify-mode voice app is told, the call goes on; menu: a menu answered with digit (null: no input or an unlisted digit, the default branch); the last step ends the plan: voicemail, voice_app (takes the call), ai_agent, hangup (reason), gather (a menu waiting for a digit: the call is routed again from node with it).',
      },
    ),
    users: T.Optional(T.Array(T.String())),
    timeout_seconds: T.Optional(T.Integer()),
    queue: T.Optional(T.String()),
    agents: T.Optional(T.Array(T.String(), { description: 'queue members who are not dnd, in dispatch order' })),
    max_wait_seconds: T.Optional(T.Integer()),
    clip: T.Optional(T.String()),
    prompt: T.Optional(Nullable(T.String())),
    digit: T.Optional(Nullable(T.String())),
    app: T.Optional(T.String({ description: 'voice app ID' })),
    ai_agent: T.Optional(T.String({ description: 'AI agent ID' })),
    voicemail_box: T.Optional(
      T.Object({ type: T.Union([T.Literal('user'), T.Literal('shared')]), id: T.String({ description: 'the user or the shared voicemail box' }) }),
    ),
    reason: T.Optional(
      T.String({
        description:
          'hangup: dropped (the number routes to nothing), no_answer (everything tried went unanswered), hangup_node, unknown_destination, inactive_extension, loop',
      }),
    ),
    dial_plan: T.Optional(T.String()),
    node: T.Optional(T.String()),
    options: T.Optional(T.Array(T.String(), { description: 'gather: the digits the menu lists' })),
    source: Nullable(StepSource),
  },
  { title: 'RouteStep', description: 'One step of a call’s routing, in the order the call goes through them. Only the fields of its kind are present.' },
)
export const RoutePreview = T.Object(
  {
    object: T.Literal('route_preview'),
    phone_number: T.String({ description: 'phone number ID' }),
    number: T.String({ description: 'E.164' }),
    at: DateTime(),
    digits: T.Array(Nullable(T.String())),
    steps: T.Array(RouteStep),
  },
  {
    title: 'RoutePreview',
    description:
      'Extension beyond the spec. What a call to the number would go through at `at`: the plan of the routing engine, step by step. A step that ends unanswered (a ring timeout, a queue’s max wait) goes on to the next; the call stops at the first that connects.',
  },
)
const UserOutcome = T.Union([T.Literal('answer'), T.Literal('no-answer'), T.Literal('busy'), T.Literal('dnd')])
export const CreateTestInboundCallRequest = Body({
  to: T.String({
    minLength: 1,
    maxLength: 32,
    pattern: `^(${E164_PATTERN.slice(1, -1)}|[0-9]{1,16})$`,
    description: 'one of the account’s phone numbers (E.164) or an extension number',
  }),
  from_number: T.Optional(T.String({ pattern: E164_PATTERN, maxLength: 16, description: 'the caller; default +15555550123' })),
  from_name: T.Optional(Nullable(T.String({ maxLength: 100 }))),
  digits: T.Optional(
    T.String({
      pattern: '^[0-9*#-]{0,20}$',
      description: 'the caller’s menu input, one character per menu reached in order; "-" is no input; menus past the end get no input',
    }),
  ),
  at: T.Optional(DateTime()),
  outcomes: T.Optional(
    T.Record(T.String({ minLength: 1, maxLength: 64 }), UserOutcome, {
      description:
        'user ID → how that user reacts when rung: answer, no-answer (rings out), busy (declines at once), dnd (is dnd for this call: never rung). Omitted: the first user rung answers. Given: only users marked answer answer.',
    }),
  ),
  talk_seconds: T.Optional(T.Integer({ minimum: 0, maximum: 120, description: 'seconds of talk once answered, or the voicemail message length; default 10' })),
  hangup_after_seconds: T.Optional(
    T.Integer({
      minimum: 0,
      maximum: 3600,
      description: 'the caller hangs up this many seconds after the call arrives unless answered by then (abandons a queue)',
    }),
  ),
  queue_priority: T.Optional(
    T.Integer({ minimum: -100, maximum: 100, description: 'the caller’s priority in a queue: higher waits ahead of lower, equal in arrival order; default 0' }),
  ),
  queue_callback_after_seconds: T.Optional(
    T.Integer({
      minimum: 0,
      maximum: 3600,
      description:
        'the caller asks for a callback this many seconds after entering a queue (while waiting, not while agents ring) and hangs up; the place is kept and, at the head, an agent calls back (queue.call.callback_requested, then callback_attempted)',
    }),
  ),
})
export const TestInboundCall = T.Object(
  {
    id: T.String({ description: 'the started call' }),
    object: T.Literal('test_inbound_call'),
    at: DateTime(),
    plan: T.Array(RouteStep),
    expected: T.Object(
      {
        status: T.Union([T.Literal('completed'), T.Literal('no-answer'), T.Literal('busy'), T.Literal('voicemail')]),
        answered_by: Nullable(T.String()),
      },
      { description: 'how the script ends: the call.end status and the user who answers' },
    ),
  },
  { title: 'TestInboundCall', description: 'Extension beyond the spec: a simulated inbound call that follows the account’s routing.' },
)
