-- One live timer per name per actor was kept by the code (update, else insert); two
-- concurrent schedules could still both insert. Keep the newest of any such pair,
-- then make (actor_kind, actor_id, name) a key, so that schedules are upserts.
DELETE FROM "durable_timers" d USING "durable_timers" n
  WHERE d."actor_kind" = n."actor_kind" AND d."actor_id" = n."actor_id" AND d."name" = n."name"
    AND (d."created_at", d."id") < (n."created_at", n."id");--> statement-breakpoint
DROP INDEX "durable_timers_actor_idx";--> statement-breakpoint
CREATE UNIQUE INDEX "durable_timers_actor_name_uq" ON "durable_timers" USING btree ("actor_kind","actor_id","name");
