ALTER TABLE "calls" ADD COLUMN "endpoint_ids" text[] DEFAULT '{}'::text[] NOT NULL;--> statement-breakpoint
CREATE INDEX "calls_endpoints_idx" ON "calls" USING gin ("endpoint_ids");