// Properties of the routing engine over generated account configs:
//   1. every valid config passes validation, and every entry point at every time
//      gives a finite plan ending in exactly one final step;
//   2. adding a reference validation says loops is refused exactly when the
//      reference model finds a path back (and route still terminates);
//   3. the plan agrees with an independent, deliberately simple reference model.
import { describe, expect, test } from 'bun:test'
import fc from 'fast-check'
import { buildRoutingConfig, type DialPlan, type DialPlanNode, type RoutingInput, type Schedule, type Target, WEEKDAYS } from './config'
import { FINAL_KINDS, type Step } from './plan'
import { type CallEntry, route } from './route'
import { isScheduleOpen } from './schedule'
import { validateRouting } from './validate'

const ZONES = ['UTC', 'America/New_York', 'Europe/Paris', 'Asia/Kolkata', 'Australia/Lord_Howe', 'Pacific/Chatham']
// 2026, with the spring and autumn DST days of both hemispheres inside.
const YEAR_START = Date.parse('2026-01-01T00:00:00Z')
const YEAR_END = Date.parse('2027-01-01T00:00:00Z')
const DIGITS = ['1', '2', '3', '#']
const hhmm = (minutes: number) => `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`

type Gen = fc.GeneratorValue
type ObjectKind = 'ring_group' | 'queue' | 'dial_plan' | 'extension'
const pick = <T>(g: Gen, items: readonly T[]): T => items[g(fc.nat, { max: items.length - 1 })]!

/**
 * A valid config: the routing objects are generated in an order and may only
 * reference objects later in it (or users, boxes and voice apps, which end a path),
 * so no loop can form.
 */
function genConfig(g: Gen): { input: RoutingInput; order: Target[] } {
  const nUsers = g(fc.integer, { min: 1, max: 4 })
  const users = Array.from({ length: nUsers }, (_, i) => ({
    id: `u${i}`,
    presence: pick(g, ['available', 'dnd', 'away', 'on_call', 'offline'] as const),
    voicemail: g(fc.boolean),
    ringSeconds: g(fc.option, fc.integer({ min: 5, max: 60 }), { nil: undefined }),
  }))
  const voicemailBoxes = Array.from({ length: g(fc.integer, { min: 0, max: 2 }) }, (_, i) => ({ id: `vm${i}` }))
  const aiAgents = Array.from({ length: g(fc.integer, { min: 0, max: 2 }) }, (_, i) => ({ id: `ai${i}` }))
  const voiceApps = Array.from({ length: g(fc.integer, { min: 0, max: 3 }) }, (_, i) =>
    aiAgents.length > 0 && g(fc.boolean)
      ? { id: `va${i}`, kind: 'ai_agent' as const, agent: pick(g, aiAgents).id }
      : { id: `va${i}`, kind: 'webhook' as const },
  )
  const schedules: Schedule[] = Array.from({ length: g(fc.integer, { min: 1, max: 2 }) }, (_, i) => genSchedule(g, `s${i}`))

  const kinds = Array.from({ length: g(fc.integer, { min: 1, max: 8 }) }, () =>
    pick(g, ['ring_group', 'queue', 'dial_plan', 'extension'] as const satisfies ObjectKind[]),
  )
  const order: Target[] = kinds.map((type, i) => ({ type, id: type === 'extension' ? `${100 + i}` : `${type}${i}` }))
  const terminals: Target[] = [
    ...users.map((u) => ({ type: 'user' as const, id: u.id })),
    ...voicemailBoxes.map((b) => ({ type: 'voicemail_box' as const, id: b.id })),
    ...voiceApps.map((a) => ({ type: 'voice_app' as const, id: a.id })),
  ]
  const targetAfter = (i: number): Target => pick(g, [...terminals, ...order.slice(i + 1)])
  const fallbackAfter = (i: number): Target | null => (g(fc.boolean) ? targetAfter(i) : null)

  const input: Required<RoutingInput> = {
    defaults: { ringSeconds: g(fc.integer, { min: 5, max: 60 }) },
    users,
    voicemailBoxes,
    aiAgents,
    voiceApps,
    schedules,
    ringGroups: [],
    queues: [],
    dialPlans: [],
    extensions: [],
    phoneNumbers: [],
  }
  const members = () =>
    g(
      fc.subarray,
      users.map((u) => u.id),
    )
  order.forEach((obj, i) => {
    if (obj.type === 'ring_group') {
      const strategy = pick(g, ['simultaneous', 'sequential'] as const)
      input.ringGroups = [
        ...input.ringGroups,
        {
          id: obj.id,
          strategy,
          members: members().map((user) => ({ user, ringSeconds: g(fc.option, fc.integer({ min: 5, max: 60 }), { nil: undefined }) })),
          ringSeconds: g(fc.integer, { min: 5, max: 60 }),
          noAnswerTarget: fallbackAfter(i),
        },
      ]
    } else if (obj.type === 'queue') {
      input.queues = [...input.queues, { id: obj.id, members: members(), maxWaitSeconds: g(fc.integer, { min: 0, max: 600 }), timeoutTarget: fallbackAfter(i) }]
    } else if (obj.type === 'extension') {
      input.extensions = [...input.extensions, { number: obj.id, target: targetAfter(i), status: g(fc.boolean) ? 'active' : 'inactive' }]
    } else {
      input.dialPlans = [...input.dialPlans, genDialPlan(g, obj.id, { targetAfter: () => targetAfter(i), schedules, voiceApps })]
    }
  })
  const nNumbers = g(fc.integer, { min: 1, max: 4 })
  input.phoneNumbers = Array.from({ length: nNumbers }, (_, i) => {
    const mode = pick(g, ['target', 'target', 'ring_all', 'drop'] as const)
    const number = `+1555000000${i}`
    if (mode === 'target') return { id: `pn${i}`, number, routing: { mode, target: targetAfter(-1) } }
    return { id: `pn${i}`, number, routing: { mode } }
  })
  return { input, order }
}

function genSchedule(g: Gen, id: string): Schedule {
  return {
    id,
    timeZone: pick(g, ZONES),
    hours: Array.from({ length: g(fc.integer, { min: 0, max: 4 }) }, () => {
      // Whole hours half of the time, so that whole-hour call times land on the edges.
      if (g(fc.boolean)) {
        const open = g(fc.integer, { min: 0, max: 23 })
        return { day: pick(g, WEEKDAYS), open: hhmm(open * 60), close: hhmm(g(fc.integer, { min: open + 1, max: 24 }) * 60) }
      }
      const open = g(fc.integer, { min: 0, max: 23 * 60 })
      return { day: pick(g, WEEKDAYS), open: hhmm(open), close: hhmm(g(fc.integer, { min: open + 1, max: 24 * 60 })) }
    }),
    holidays: Array.from({ length: g(fc.integer, { min: 0, max: 2 }) }, () =>
      new Date(g(fc.integer, { min: YEAR_START, max: YEAR_END })).toISOString().slice(0, 10),
    ),
    hold: pick(g, [null, null, 'open', 'closed'] as const),
  }
}

/** Nodes n0..nk; a node only leads to later nodes, the last one ends the plan. */
function genDialPlan(
  g: Gen,
  id: string,
  ctx: { targetAfter: () => Target; schedules: readonly Schedule[]; voiceApps: RoutingInput['voiceApps'] & {} },
): DialPlan {
  const count = g(fc.integer, { min: 1, max: 6 })
  const later = (m: number) => `n${g(fc.integer, { min: m + 1, max: count - 1 })}`
  const webhookApps = ctx.voiceApps.filter((a) => a.kind === 'webhook')
  const nodes: Record<string, DialPlanNode> = {}
  for (let m = 0; m < count; m++) {
    const last = m === count - 1
    const kind = last
      ? pick(g, ['route', 'hangup', 'control', 'menu'] as const)
      : pick(g, ['route', 'hangup', 'control', 'menu', 'schedule', 'play', 'notify'] as const)
    let node: DialPlanNode
    if (kind === 'route') node = { kind: 'route', target: ctx.targetAfter() }
    else if (kind === 'hangup') node = { kind: 'hangup' }
    else if (kind === 'control') node = ctx.voiceApps.length > 0 ? { kind: 'voice_app', app: pick(g, ctx.voiceApps).id, mode: 'control' } : { kind: 'hangup' }
    else if (kind === 'menu') {
      const digits = last ? [] : g(fc.subarray, DIGITS)
      node = {
        kind: 'menu',
        prompt: g(fc.boolean) ? `clip_${m}` : null,
        options: digits.map((digit) => ({ digit, next: later(m) })),
        default: !last && g(fc.boolean) ? later(m) : null,
      }
    } else if (kind === 'schedule') node = { kind: 'schedule', schedule: pick(g, ctx.schedules).id, open: later(m), closed: later(m) }
    else if (kind === 'play') node = { kind: 'play', clip: `clip_${m}`, next: later(m) }
    else
      node =
        webhookApps.length > 0
          ? { kind: 'voice_app', app: pick(g, webhookApps).id, mode: 'notify', next: later(m) }
          : { kind: 'play', clip: `clip_${m}`, next: later(m) }
    nodes[`n${m}`] = node
  }
  return { id, entry: 'n0', nodes }
}

// ---------------------------------------------------------------- reference model
// Written from the rules in index.ts, on the raw arrays, by plain recursion, with
// its own reading of the local time (toLocaleString, not formatToParts).

function refIsOpen(s: Schedule, now: number): boolean {
  if (s.hold) return s.hold === 'open'
  const text = new Date(now).toLocaleString('sv-SE', { timeZone: s.timeZone, hourCycle: 'h23' }) // "2026-03-08 01:59:00"
  const date = text.slice(0, 10)
  const minute = Number(text.slice(11, 13)) * 60 + Number(text.slice(14, 16))
  const day = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'][new Date(`${date}T12:00:00Z`).getUTCDay()]
  if (s.holidays.includes(date)) return false
  const mins = (t: string) => Number(t.slice(0, 2)) * 60 + Number(t.slice(3, 5))
  return s.hours.some((h) => h.day === day && minute >= mins(h.open) && minute < mins(h.close))
}

function referencePlan(c: RoutingInput, entry: CallEntry, digitsIn: readonly (string | null)[], now: number): string[] {
  const out: string[] = []
  const end = (token: string): string => {
    out.push(token)
    return token
  }
  const digits = [...digitsIn]
  const userOk = (id: string) => c.users?.find((u) => u.id === id && u.presence !== 'dnd') !== undefined
  const defaultRing = c.defaults?.ringSeconds ?? 30

  const go = (t: Target): string => {
    if (t.type === 'extension') {
      const e = c.extensions!.find((x) => x.number === t.id)!
      if (e.status === 'inactive') return end('hangup(inactive_extension)')
      return go(e.target)
    }
    if (t.type === 'user') {
      const u = c.users!.find((x) => x.id === t.id)!
      if (u.presence !== 'dnd') out.push(`ring(${u.id}/${u.ringSeconds ?? defaultRing})`)
      return end(u.voicemail ? `voicemail(user:${u.id})` : 'hangup(no_answer)')
    }
    if (t.type === 'ring_group') {
      const rg = c.ringGroups!.find((x) => x.id === t.id)!
      const live = rg.members.filter((m) => userOk(m.user))
      if (rg.strategy === 'simultaneous' && live.length > 0) out.push(`ring(${live.map((m) => m.user).join(',')}/${rg.ringSeconds})`)
      if (rg.strategy === 'sequential') for (const m of live) out.push(`ring(${m.user}/${m.ringSeconds ?? rg.ringSeconds})`)
      return rg.noAnswerTarget ? go(rg.noAnswerTarget) : end('hangup(no_answer)')
    }
    if (t.type === 'queue') {
      const q = c.queues!.find((x) => x.id === t.id)!
      out.push(`enqueue(${q.id}:${q.members.filter(userOk).join(',')}/${q.maxWaitSeconds || 3600})`)
      return q.timeoutTarget ? go(q.timeoutTarget) : end('hangup(no_answer)')
    }
    if (t.type === 'voicemail_box') return end(`voicemail(shared:${t.id})`)
    if (t.type === 'voice_app') return app(t.id)
    const plan = c.dialPlans!.find((x) => x.id === t.id)!
    return node(plan, plan.entry)
  }
  const app = (id: string): string => {
    const a = c.voiceApps!.find((x) => x.id === id)!
    return end(a.kind === 'webhook' ? `voice_app(${a.id})` : `ai_agent(${a.agent}:${a.id})`)
  }
  const node = (plan: DialPlan, id: string): string => {
    const n = plan.nodes[id]!
    if (n.kind === 'hangup') return end('hangup(hangup_node)')
    if (n.kind === 'route') return go(n.target)
    if (n.kind === 'play') {
      out.push(`play(${n.clip})`)
      return node(plan, n.next)
    }
    if (n.kind === 'voice_app') {
      if (n.mode === 'control') return app(n.app)
      out.push(`notify(${n.app})`)
      return node(plan, n.next)
    }
    if (n.kind === 'schedule') return node(plan, refIsOpen(c.schedules!.find((s) => s.id === n.schedule)!, now) ? n.open : n.closed)
    if (digits.length === 0) return end(`gather(${plan.id}#${id}:${n.options.map((o) => o.digit).join('')})`)
    const d = digits.shift()
    const option = n.options.find((o) => o.digit === d)
    out.push(`menu(${option ? d : '-'})`)
    const next = option ? option.next : n.default
    return next ? node(plan, next) : end('hangup(hangup_node)')
  }

  if (entry.type === 'number') {
    const pn = c.phoneNumbers!.find((p) => p.number === entry.number)!
    if (pn.routing.mode === 'drop') end('hangup(dropped)')
    else if (pn.routing.mode === 'target') go(pn.routing.target)
    else {
      const live = c.users!.filter((u) => u.presence !== 'dnd')
      if (live.length > 0) out.push(`ring(${live.map((u) => u.id).join(',')}/${defaultRing})`)
      end('hangup(no_answer)')
    }
  } else if (entry.type === 'extension') go({ type: 'extension', id: entry.number })
  else if (entry.type === 'target') go(entry.target)
  return out
}

/** The engine's plan in the reference model's notation. */
function notation(steps: Step[]): string[] {
  return steps.map((s) => {
    switch (s.kind) {
      case 'ring':
        return `ring(${s.users.join(',')}/${s.timeoutSeconds})`
      case 'enqueue':
        return `enqueue(${s.queue}:${s.agents.join(',')}/${s.maxWaitSeconds})`
      case 'play':
        return `play(${s.clip})`
      case 'notify':
        return `notify(${s.app})`
      case 'menu':
        return `menu(${s.digit ?? '-'})`
      case 'voicemail':
        return `voicemail(${s.box.type}:${s.box.id})`
      case 'voice_app':
        return `voice_app(${s.app})`
      case 'ai_agent':
        return `ai_agent(${s.agent}:${s.app})`
      case 'hangup':
        return `hangup(${s.reason})`
      case 'gather':
        return `gather(${s.dialPlan}#${s.node}:${s.options.join('')})`
    }
    return String(s satisfies never)
  })
}

/** Every way into the account: each number, each extension, each routing object. */
function entries(input: RoutingInput, order: Target[]): CallEntry[] {
  return [
    ...(input.phoneNumbers ?? []).map((p): CallEntry => ({ type: 'number', number: p.number })),
    ...(input.extensions ?? []).map((e): CallEntry => ({ type: 'extension', number: e.number })),
    ...order.map((target): CallEntry => ({ type: 'target', target })),
    ...(input.users ?? []).map((u): CallEntry => ({ type: 'target', target: { type: 'user', id: u.id } })),
  ]
}

const HOUR = 3_600_000
/** Any instant of 2026, or a whole hour (an edge of whole-hour opening hours in most zones). */
const time = fc.oneof(
  fc.integer({ min: YEAR_START, max: YEAR_END }),
  fc.integer({ min: 0, max: (YEAR_END - YEAR_START) / HOUR }).map((h) => YEAR_START + h * HOUR),
)
const digitScript = fc.array(fc.option(fc.constantFrom(...DIGITS, '9'), { nil: null }), { maxLength: 4 })

describe('routing properties', () => {
  test('every generated valid config validates and terminates: one final step, last, for every entry and time', () => {
    fc.assert(
      fc.property(fc.gen(), fc.array(time, { minLength: 1, maxLength: 4 }), digitScript, (g, times, digits) => {
        const { input, order } = genConfig(g)
        const config = buildRoutingConfig(input)
        expect(validateRouting(config)).toEqual([])
        // A path visits each object and node at most once: a bound no finite plan of this config can exceed.
        const nodeCount = (input.dialPlans ?? []).reduce((n, d) => n + Object.keys(d.nodes).length, 0)
        const bound = 2 + (input.users?.length ?? 0) * order.length + nodeCount + order.length
        for (const now of times) {
          for (const entry of entries(input, order)) {
            const steps = route(config, { entry, digits }, now).steps
            expect(steps.length).toBeLessThanOrEqual(bound)
            expect(steps.filter((s) => FINAL_KINDS.has(s.kind))).toHaveLength(1)
            expect(FINAL_KINDS.has(steps.at(-1)!.kind)).toBe(true)
            expect(steps.at(-1)).not.toMatchObject({ kind: 'hangup', reason: 'loop' })
            expect(steps.at(-1)).not.toMatchObject({ kind: 'hangup', reason: 'unknown_destination' })
          }
        }
      }),
      { numRuns: 150 },
    )
  })

  test('schedule evaluation agrees with the reference reading of local time (hold, holidays, edges, DST)', () => {
    fc.assert(
      fc.property(fc.gen(), fc.array(time, { minLength: 1, maxLength: 20 }), (g, times) => {
        const schedule = genSchedule(g, 's')
        // Days with hours, so that most instants fall on a day the schedule speaks about.
        // and a holiday some of the instants fall on, at least in zones near UTC.
        const busy = {
          ...schedule,
          hours: [...schedule.hours, ...schedule.hours.map((h) => ({ ...h, day: pick(g, WEEKDAYS) }))],
          holidays: [...schedule.holidays, new Date(times[0]!).toISOString().slice(0, 10)],
        }
        for (const now of times) expect(isScheduleOpen(busy, now)).toBe(refIsOpen(busy, now))
      }),
      { numRuns: 500 },
    )
  })

  test('the plan agrees with the reference model at any time', () => {
    fc.assert(
      fc.property(fc.gen(), time, digitScript, (g, now, digits) => {
        const { input, order } = genConfig(g)
        const config = buildRoutingConfig(input)
        for (const entry of entries(input, order)) {
          expect(notation(route(config, { entry, digits }, now).steps)).toEqual(referencePlan(input, entry, digits, now))
        }
      }),
      { numRuns: 200 },
    )
  })

  test('adding a reference (fallback, timeout target, extension target, dial plan route) is refused as a loop exactly when it leads back', () => {
    fc.assert(
      fc.property(fc.gen(), (g) => {
        const { input, order } = genConfig(g)
        const from = pick(g, order)
        const to = pick(g, order)
        const mutated: RoutingInput = {
          ...input,
          ringGroups: input.ringGroups!.map((rg) => (from.type === 'ring_group' && rg.id === from.id ? { ...rg, noAnswerTarget: to } : rg)),
          queues: input.queues!.map((q) => (from.type === 'queue' && q.id === from.id ? { ...q, timeoutTarget: to } : q)),
          extensions: input.extensions!.map((e) => (from.type === 'extension' && e.number === from.id ? { ...e, target: to } : e)),
          // A dial plan's entry becomes a route node to `to`.
          dialPlans: input.dialPlans!.map((d) =>
            from.type === 'dial_plan' && d.id === from.id ? { ...d, nodes: { ...d.nodes, [d.entry]: { kind: 'route' as const, target: to } } } : d,
          ),
        }
        const loops = validateRouting(buildRoutingConfig(mutated)).filter((p) => p.code === 'routing_loop')
        expect(loops.length > 0).toBe(reaches(mutated, to, from))
        for (const loop of loops) {
          expect(loop.cycle![0]).toBe(loop.cycle!.at(-1)!)
          expect(loop.cycle).toContain(`${from.type}:${from.id}`)
        }
        // Even a config that skipped validation gives finite plans.
        const config = buildRoutingConfig(mutated)
        for (const entry of entries(mutated, order)) {
          const steps = route(config, { entry, digits: ['1', '2', null] }, YEAR_START).steps
          expect(FINAL_KINDS.has(steps.at(-1)!.kind)).toBe(true)
        }
      }),
      { numRuns: 200 },
    )
  })
})

/** Reference reachability: can a call routed to `start` come to `goal` (through any branch, at any time)? */
function reaches(c: RoutingInput, start: Target, goal: Target): boolean {
  const seen = new Set<string>()
  const next = (t: Target): Target[] => {
    if (t.type === 'extension') return [c.extensions!.find((e) => e.number === t.id)!.target]
    if (t.type === 'ring_group') return [c.ringGroups!.find((r) => r.id === t.id)!.noAnswerTarget ?? null].filter((x): x is Target => x !== null)
    if (t.type === 'queue') return [c.queues!.find((q) => q.id === t.id)!.timeoutTarget ?? null].filter((x): x is Target => x !== null)
    if (t.type === 'dial_plan') {
      // Only nodes the entry leads to count: an orphan node is never run.
      const plan = c.dialPlans!.find((d) => d.id === t.id)!
      const live = new Set<string>()
      const walk = (id: string | null | undefined) => {
        if (!id || live.has(id)) return
        live.add(id)
        const n = plan.nodes[id]!
        if (n.kind === 'menu') for (const next of [...n.options.map((o) => o.next), n.default]) walk(next)
        if (n.kind === 'schedule') for (const next of [n.open, n.closed]) walk(next)
        if (n.kind === 'play' || (n.kind === 'voice_app' && n.mode === 'notify')) walk(n.next)
      }
      walk(plan.entry)
      return [...live].flatMap((id) => {
        const n = plan.nodes[id]!
        return n.kind === 'route' ? [n.target] : []
      })
    }
    return []
  }
  const visit = (t: Target): boolean => {
    if (t.type === goal.type && t.id === goal.id) return true
    const key = `${t.type}:${t.id}`
    if (seen.has(key)) return false
    seen.add(key)
    return next(t).some(visit)
  }
  return visit(start)
}
