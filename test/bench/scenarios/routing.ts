/**
 * `npm run bench -- routing`: the routing engine on one core, in this process (it
 * is a pure function: no service to start).
 *
 *   route()     decisions per second on one account of 1,000 users and 1,000
 *               extensions, 100 ring groups (half simultaneous, half sequential),
 *               50 queues and 61 dial plans three levels deep (schedule → menu →
 *               sub-menu → ring group or queue), entered through its numbers and
 *               extensions with menu digits, `now` moving one second per call
 *               (goal ≥ 100,000/s)
 *   validate    validateRouting() on the same config, what a write costs
 *   queue       dispatch decisions of a queue with 1,000 waiting callers and 100
 *               agents (scenarios/queue-dispatch.ts; goal < 1 ms p99)
 *
 * Uses BENCH_DURATION (seconds measured, default 10) and BENCH_WARMUP (default 2).
 */
import { buildRoutingConfig, type DialPlan, type RoutedCall, type RoutingInput, route, validateRouting } from '../../../machines/routing'
import type { BenchContext } from '../run'

export const GOAL = { decisionsPerSec: 100_000 }

const num = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })

/** The bench account: deterministic, so runs compare. */
export function benchConfig(): { input: RoutingInput; calls: RoutedCall[] } {
  const USERS = 1000
  const users = Array.from({ length: USERS }, (_, i) => ({
    id: `user_${i}`,
    presence: i % 10 === 0 ? ('dnd' as const) : ('available' as const),
    voicemail: i % 3 !== 0,
  }))
  const ringGroups = Array.from({ length: 100 }, (_, g) => ({
    id: `rg_${g}`,
    strategy: g % 2 === 0 ? ('simultaneous' as const) : ('sequential' as const),
    members: Array.from({ length: 8 }, (_, m) => ({ user: `user_${(g * 8 + m) % USERS}`, ringSeconds: m % 2 ? 10 : undefined })),
    ringSeconds: 20,
    noAnswerTarget: { type: 'queue' as const, id: `q_${g % 50}` },
  }))
  const queues = Array.from({ length: 50 }, (_, q) => ({
    id: `q_${q}`,
    members: Array.from({ length: 20 }, (_, m) => `user_${(q * 20 + m) % USERS}`),
    maxWaitSeconds: q % 5 === 0 ? 0 : 300,
    timeoutTarget: { type: 'voicemail_box' as const, id: `vm_${q % 10}` },
  }))
  const voicemailBoxes = Array.from({ length: 10 }, (_, i) => ({ id: `vm_${i}` }))
  const schedules = Array.from({ length: 5 }, (_, i) => ({
    id: `sch_${i}`,
    timeZone: ['America/New_York', 'Europe/Paris', 'Asia/Kolkata', 'America/Los_Angeles', 'Australia/Sydney'][i]!,
    hours: (['mon', 'tue', 'wed', 'thu', 'fri'] as const).map((day) => ({ day, open: '08:00', close: '18:00' })),
    holidays: ['2026-12-25', '2026-01-01'],
    hold: null,
  }))
  const voiceApps = [
    { id: 'va_crm', kind: 'webhook' as const },
    { id: 'va_bot', kind: 'ai_agent' as const, agent: 'ai_front' },
  ]

  // Level 3: 40 department menus, each option a ring group or a queue.
  const departments: DialPlan[] = Array.from({ length: 40 }, (_, d) => ({
    id: `dp_dept_${d}`,
    entry: 'menu',
    nodes: {
      menu: {
        kind: 'menu',
        prompt: 'clip_dept',
        options: [
          { digit: '1', next: 'group' },
          { digit: '2', next: 'queue' },
        ],
        default: 'group',
      },
      group: { kind: 'route', target: { type: 'ring_group', id: `rg_${(d * 2) % 100}` } },
      queue: { kind: 'route', target: { type: 'queue', id: `q_${d % 50}` } },
    },
  }))
  // Level 2: 20 site menus, each option a department.
  const sites: DialPlan[] = Array.from({ length: 20 }, (_, s) => ({
    id: `dp_site_${s}`,
    entry: 'menu',
    nodes: {
      menu: {
        kind: 'menu',
        prompt: 'clip_site',
        options: ['1', '2', '3'].map((digit, k) => ({ digit, next: `d${k}` })),
        default: 'd0',
      },
      ...Object.fromEntries(
        [0, 1, 2].map((k) => [`d${k}`, { kind: 'route' as const, target: { type: 'dial_plan' as const, id: `dp_dept_${(s * 2 + k) % 40}` } }]),
      ),
    },
  }))
  // Level 1: the main plan: schedule, CRM notification, a menu of sites, after hours to voicemail.
  const main: DialPlan = {
    id: 'dp_main',
    entry: 'hours',
    nodes: {
      hours: { kind: 'schedule', schedule: 'sch_0', open: 'notify', closed: 'closed' },
      notify: { kind: 'voice_app', app: 'va_crm', mode: 'notify', next: 'menu' },
      menu: {
        kind: 'menu',
        prompt: 'clip_main',
        options: [...['1', '2', '3', '4', '5', '6', '7', '8'].map((digit, k) => ({ digit, next: `site${k}` })), { digit: '0', next: 'bot' }],
        default: 'site0',
      },
      ...Object.fromEntries(
        Array.from({ length: 8 }, (_, k) => [`site${k}`, { kind: 'route' as const, target: { type: 'dial_plan' as const, id: `dp_site_${k}` } }]),
      ),
      bot: { kind: 'voice_app', app: 'va_bot', mode: 'control' },
      closed: { kind: 'play', clip: 'clip_closed', next: 'box' },
      box: { kind: 'route', target: { type: 'voicemail_box', id: 'vm_0' } },
    },
  }
  const dialPlans = [main, ...sites, ...departments]

  const extensions = [
    ...Array.from({ length: 800 }, (_, i) => ({ number: `${1000 + i}`, target: { type: 'user' as const, id: `user_${i}` }, status: 'active' as const })),
    ...ringGroups.map((g, i) => ({ number: `${2000 + i}`, target: { type: 'ring_group' as const, id: g.id }, status: 'active' as const })),
    ...queues.map((q, i) => ({ number: `${3000 + i}`, target: { type: 'queue' as const, id: q.id }, status: 'active' as const })),
    ...dialPlans.slice(0, 50).map((d, i) => ({ number: `${4000 + i}`, target: { type: 'dial_plan' as const, id: d.id }, status: 'active' as const })),
  ]
  const phoneNumbers = [
    { id: 'pn_main', number: '+15550100000', routing: { mode: 'target' as const, target: { type: 'dial_plan' as const, id: 'dp_main' } } },
    ...Array.from({ length: 20 }, (_, i) => ({
      id: `pn_site_${i}`,
      number: `+155501001${String(i).padStart(2, '0')}`,
      routing: { mode: 'target' as const, target: { type: 'dial_plan' as const, id: `dp_site_${i}` } },
    })),
    { id: 'pn_all', number: '+15550100200', routing: { mode: 'ring_all' as const } },
  ]
  const input: RoutingInput = {
    users,
    ringGroups,
    queues,
    voicemailBoxes,
    schedules,
    voiceApps,
    aiAgents: [{ id: 'ai_front' }],
    dialPlans,
    extensions,
    phoneNumbers,
  }

  // A call mix: half through the main number's three menu levels, the rest split between site numbers and extensions.
  let seed = 42
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed % n
  }
  const digit = () => String(rand(10))
  const calls: RoutedCall[] = Array.from({ length: 4096 }, (_, i) => {
    if (i % 2 === 0) return { entry: { type: 'number', number: '+15550100000' }, digits: [digit(), digit(), digit()] }
    if (i % 4 === 1) return { entry: { type: 'number', number: phoneNumbers[1 + rand(20)]!.number }, digits: [digit(), digit()] }
    return { entry: { type: 'extension', number: extensions[rand(extensions.length)]!.number } }
  })
  return { input, calls }
}

interface RouteResult {
  decisions: number
  seconds: number
  steps: number
}

function measureRoute(durationS: number, input: RoutingInput, calls: RoutedCall[], startMs: number): RouteResult {
  const config = buildRoutingConfig(input)
  let now = startMs
  let decisions = 0
  let steps = 0
  const deadline = performance.now() + durationS * 1000
  const started = performance.now()
  // Batches of the whole call mix between clock checks, so the clock is not what is measured.
  while (performance.now() < deadline) {
    for (const call of calls) {
      steps += route(config, call, (now += 1000)).steps.length
    }
    decisions += calls.length
  }
  return { decisions, seconds: (performance.now() - started) / 1000, steps }
}

export async function run(ctx: BenchContext): Promise<void> {
  const { input, calls } = benchConfig()
  const config = buildRoutingConfig(input)
  const vStart = performance.now()
  const problems = validateRouting(config)
  const validateMs = performance.now() - vStart
  if (problems.length > 0) throw new Error(`the bench config is invalid: ${JSON.stringify(problems.slice(0, 3))}`)

  // Monday 23 November 2026 06:00 New York: the run crosses opening time, so both schedule branches are taken.
  const start = Date.parse('2026-11-23T11:00:00Z')
  console.log(
    `\n[routing] ${num(input.users!.length)} users, ${num(input.extensions!.length)} extensions, ${num(input.ringGroups!.length)} ring groups, ${num(input.queues!.length)} queues, ${num(input.dialPlans!.length)} dial plans (3 levels); ${num(calls.length)} calls in the mix`,
  )
  if (ctx.warmupS > 0) measureRoute(ctx.warmupS, input, calls, start)
  const r = measureRoute(ctx.durationS, input, calls, start)
  const perSec = r.decisions / r.seconds

  const lines: string[] = []
  lines.push(
    `  route()           ${num(perSec)} decisions/s on one core (${num(r.decisions)} in ${r.seconds.toFixed(1)} s, ${(r.steps / r.decisions).toFixed(1)} steps per plan, ${((r.seconds * 1e6) / r.decisions).toFixed(2)} µs each)`,
  )
  lines.push(`                    goal ≥ ${num(GOAL.decisionsPerSec)}/s: ${perSec >= GOAL.decisionsPerSec ? 'PASS' : 'MISS'}`)
  lines.push(`  validateRouting() ${validateMs.toFixed(1)} ms for the whole account (first run, cold), ${problems.length} problems`)

  try {
    const { measureQueueDispatch, QUEUE_DISPATCH_GOAL } = await import('./queue-dispatch')
    const q = await measureQueueDispatch()
    lines.push(
      `  queue dispatch    p50 ${q.p50Ms.toFixed(3)} ms, p99 ${q.p99Ms.toFixed(3)} ms (${num(q.decisions)} decisions, ${num(QUEUE_DISPATCH_GOAL.waiting)} waiting, ${num(QUEUE_DISPATCH_GOAL.agents)} agents)`,
    )
    lines.push(`                    goal p99 < ${QUEUE_DISPATCH_GOAL.p99Ms} ms: ${q.p99Ms < QUEUE_DISPATCH_GOAL.p99Ms ? 'PASS' : 'MISS'}`)
  } catch (e) {
    lines.push(`  queue dispatch    failed: ${e instanceof Error ? e.message : String(e)}`)
  }

  console.log('\n=== routing: decisions on one core ===')
  for (const l of lines) console.log(l)
}
