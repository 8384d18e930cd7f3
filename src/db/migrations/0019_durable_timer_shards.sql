-- Migration 0004 added durable_timers.shard with a default of 0: timers written
-- before it sat on shard 0, where only the worker holding shard 0 polls. Each moves
-- to its actor's shard: actors/runtime/shards.ts shardOf (FNV-1a of the id, 32 bit,
-- modulo the 16 shards of the runtime), written again in SQL for this once.
CREATE FUNCTION voice_shard_of(id text, shard_count integer) RETURNS integer
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  h bigint := 2166136261;
BEGIN
  FOR i IN 1..length(id) LOOP
    h := ((h # ascii(substr(id, i, 1))) * 16777619) & 4294967295;
  END LOOP;
  RETURN (h % shard_count)::integer;
END;
$$;--> statement-breakpoint
UPDATE "durable_timers" SET "shard" = voice_shard_of("actor_id", 16) WHERE "shard" = 0;--> statement-breakpoint
DROP FUNCTION voice_shard_of(text, integer);
