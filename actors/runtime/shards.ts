/**
 * Which shard an actor lives on: a stable hash of its id. The same function places
 * actors on workers (actors/placement) and tags their durable timers, so a worker
 * polls only the timers of the shards it holds.
 */
export const DEFAULT_SHARD_COUNT = 16

/** FNV-1a (32 bit) of the id, modulo the shard count: stable across processes and releases. */
export function shardOf(id: string, shardCount = DEFAULT_SHARD_COUNT): number {
  let h = 0x811c9dc5
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i)
    h = Math.imul(h, 0x01000193)
  }
  return (h >>> 0) % shardCount
}
