/**
 * Lanes of first attempts, one per (endpoint, account): inside a lane the first
 * attempts go one after another in the order they were enqueued (commit order:
 * dispatch and resume enqueue in event order); lanes run in parallel. Retries do
 * not go through lanes: they are not ordered.
 *
 * Memory only: what is in a lane is also a pending row with no attempt yet, which
 * resume puts back after a restart.
 */
import type { Logger } from '../../logger'
import type { Job } from './types'

/** Makes one attempt; calls `acknowledged` as soon as the receiver has acknowledged it, before it is recorded. */
export type LaneAttempt = (job: Job, acknowledged: () => void) => Promise<void>

export class Lanes {
  /** Jobs waiting, by lane key. A lane is removed once empty. */
  private readonly queued = new Map<string, Job[]>()
  /** Lanes with a runner working through them. */
  private readonly busy = new Set<string>()

  constructor(
    private readonly deps: {
      attempt: LaneAttempt
      /** False once delivery is stopping: runners take no further job (the rows stay for resume). */
      active: () => boolean
      log: Logger
    },
  ) {}

  static keyOf(job: Job) {
    return `${job.delivery.endpointId}|${job.delivery.accountId}`
  }

  enqueue(job: Job) {
    const key = Lanes.keyOf(job)
    let lane = this.queued.get(key)
    if (!lane) this.queued.set(key, (lane = []))
    lane.push(job)
    if (!this.busy.has(key)) void this.run(key)
  }

  /** Jobs waiting in a lane (not counting the one being attempted). */
  waiting(key: string) {
    return this.queued.get(key)?.length ?? 0
  }

  isBusy(key: string) {
    return this.busy.has(key)
  }

  /**
   * Forgets every waiting job: this process no longer delivers (it lost the delivery
   * lock). The jobs are pending rows, which the next deliverer resumes.
   */
  clear() {
    for (const lane of this.queued.values()) lane.length = 0
    this.queued.clear()
  }

  private async run(key: string) {
    this.busy.add(key)
    try {
      // The lane is looked up at each turn: clear() may have replaced it meanwhile.
      for (let lane = this.queued.get(key); this.deps.active() && lane && lane.length > 0; lane = this.queued.get(key)) {
        const job = lane.shift()!
        // The lane's next first attempt goes once this one is acknowledged, while it is being
        // recorded (a failure is recorded first). Recording keeps the lane's order, so a crash
        // before it is recorded sends it again on resume, in order: at-least-once, as before.
        await new Promise<void>((next) => {
          this.deps
            .attempt(job, next)
            .catch((err) => this.deps.log.error({ err, delivery: job.delivery.id }, 'delivery attempt crashed'))
            .finally(next)
        })
      }
      if (this.queued.get(key)?.length === 0) this.queued.delete(key)
    } finally {
      this.busy.delete(key)
    }
    // Jobs enqueued while this runner was finishing an attempt from before a clear() would otherwise wait for the next enqueue.
    if (this.deps.active() && (this.queued.get(key)?.length ?? 0) > 0) void this.run(key)
  }
}
