-- The retry poll walks only deliveries that failed an attempt (src/db/schema/events.ts): a delivery
-- delivered at its first attempt no longer leaves a dead entry in the index that poll reads.
DROP INDEX "webhook_deliveries_due_idx";--> statement-breakpoint
CREATE INDEX "webhook_deliveries_fresh_idx" ON "webhook_deliveries" USING btree ("event_seq") WHERE "webhook_deliveries"."state" = 'pending' and "webhook_deliveries"."attempts" = 0;--> statement-breakpoint
CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries" USING btree ("next_attempt_at") WHERE "webhook_deliveries"."state" = 'pending' and "webhook_deliveries"."attempts" > 0;