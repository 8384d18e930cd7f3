CREATE TABLE "shard_fences" (
	"shard" integer PRIMARY KEY NOT NULL,
	"epoch" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "durable_timers" ADD COLUMN "shard" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "durable_timers_shard_due_idx" ON "durable_timers" USING btree ("shard","due_at");