// The routing engine (the PBX): what a call does with the account's routing
// objects. Pure: no I/O, no clock read (the caller passes `now`).
//
// CONFIG (config.ts). `buildRoutingConfig(input)` indexes one account's rows:
//   users            id, presence (only dnd matters: never rung), voicemail (has a
//                    personal box), ringSeconds (when targeted directly)
//   extensions       number, target, status active|inactive
//   ringGroups       strategy simultaneous|sequential, members [{user, ringSeconds?}]
//                    (per-member time for sequential), ringSeconds, noAnswerTarget?
//   queues           members (user ids), maxWaitSeconds (0 = the one-hour ceiling),
//                    timeoutTarget?
//   dialPlans        entry node and a table of nodes:
//                      menu      prompt clip, options digit→node, default node
//                      schedule  schedule id, open node, closed node
//                      play      clip, next node
//                      voice_app app, mode control (takes the call) or notify
//                                (webhook only, then next node)
//                      route     a routing target (leaves the plan)
//                      hangup
//   schedules        timeZone (IANA, the location's), weekly hours [{day, open, close}]
//                    in local "HH:MM" (close may be "24:00"), holidays (local dates),
//                    hold open|closed|null (overrides everything)
//   voicemailBoxes   shared boxes
//   voiceApps        kind webhook, or kind ai_agent with its AI agent
//   aiAgents         id
//   phoneNumbers     number (E.164), routing: {mode:'target', target} |
//                    {mode:'ring_all'} (no target: rings every user) | {mode:'drop'}
// A target is {type, id} with type user, ring_group, queue, dial_plan,
// voicemail_box, voice_app or extension (id = the extension number). The spec's
// targets are bare ids; the service resolves each id to its type when it loads.
//
// CALL. `route(config, {entry, digits?}, now)`; entry is an inbound number, a
// dialled extension, a target, or a dial plan node to resume at. `digits` is the
// caller's menu input, one per menu reached (null = no input).
//
// PLAN (plan.ts). A list of steps the call actor executes in order:
//   ring {users, timeoutSeconds}   all these users' devices at once; a sequential
//                                  group is one ring step per member
//   enqueue {queue, agents, maxWaitSeconds}
//   play {clip} · notify {app} · menu {digit} (input already known)
//   voicemail {box} · voice_app {app} · ai_agent {agent, app} · hangup {reason}
//   gather {dialPlan, node, options}: wait for a digit, then route again from
//                                  {type:'node', dialPlan, node} with that digit
// The last step, and only the last, is final (voicemail, voice_app, ai_agent,
// hangup, gather). Outcomes are not branches: the actor stops at the first step
// that connects (a ring or a queue answered); a step that ends unanswered (ring
// timeout, queue max wait) goes on to the next step, which is the fallback that
// config names (noAnswerTarget, timeoutTarget, the user's voicemail), else
// hangup no_answer. So the plan is fully determined by config, call and now.
// dnd users are left out of ring steps and queue agents; a ring step with nobody
// left is omitted. Presence other than dnd does not change the plan.
//
// VALIDATION (validate.ts). `validateRouting(config)` lists every problem with the
// field path (RoutingInput names): unknown references, routing loops through
// extensions, ring groups, queues and dial plans (fallbacks, timeout targets,
// nodes; the whole cycle is given), notify-mode nodes naming an AI-agent app, bad
// values. Services validate the changed account config before storing
// (`validateChange(before, after)`: only what the change brings, every loop), so a
// stored config never loops; route() still stops a loop defensively (hangup 'loop').
export * from './config'
export * from './plan'
export * from './route'
export { isScheduleOpen, type LocalTime, localTime } from './schedule'
export * from './validate'
