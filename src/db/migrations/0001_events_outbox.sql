CREATE TABLE "events" (
	"seq" bigserial PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"platform_id" text NOT NULL,
	"account_id" text NOT NULL,
	"mode" text NOT NULL,
	"type" text NOT NULL,
	"body" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"dispatched" boolean DEFAULT false NOT NULL,
	CONSTRAINT "events_id_unique" UNIQUE("id")
);
--> statement-breakpoint
CREATE TABLE "operator_mail" (
	"id" text PRIMARY KEY NOT NULL,
	"to" jsonb NOT NULL,
	"subject" text NOT NULL,
	"body" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"event_seq" bigint NOT NULL,
	"event_id" text NOT NULL,
	"endpoint_id" text NOT NULL,
	"account_id" text NOT NULL,
	"state" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"max_attempts" integer NOT NULL,
	"next_attempt_at" timestamp (3) with time zone NOT NULL,
	"last_status" integer,
	"last_error" text,
	"committed_at" timestamp (3) with time zone NOT NULL,
	"first_attempt_at" timestamp (3) with time zone,
	"delivered_at" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_endpoints" (
	"id" text PRIMARY KEY NOT NULL,
	"platform_id" text NOT NULL,
	"account_id" text,
	"mode" text NOT NULL,
	"url" text NOT NULL,
	"secret" text NOT NULL,
	"enabled_events" jsonb NOT NULL,
	"description" text,
	"status" text NOT NULL,
	"consecutive_failures" integer DEFAULT 0 NOT NULL,
	"unhealthy_since" timestamp (3) with time zone,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "platforms" ADD COLUMN "admin_emails" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
CREATE INDEX "events_undispatched_idx" ON "events" USING btree ("seq") WHERE "events"."dispatched" = false;--> statement-breakpoint
CREATE INDEX "events_account_seq_idx" ON "events" USING btree ("account_id","seq");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries" USING btree ("next_attempt_at") WHERE "webhook_deliveries"."state" = 'pending';--> statement-breakpoint
CREATE INDEX "webhook_deliveries_dead_idx" ON "webhook_deliveries" USING btree ("updated_at","id") WHERE "webhook_deliveries"."state" = 'dead';--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_idx" ON "webhook_deliveries" USING btree ("endpoint_id","event_seq");--> statement-breakpoint
CREATE INDEX "webhook_endpoints_scope_idx" ON "webhook_endpoints" USING btree ("platform_id","mode","account_id","created_at","id");