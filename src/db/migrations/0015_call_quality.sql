CREATE TABLE "call_quality" (
	"call_id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"ended_at" timestamp (3) with time zone NOT NULL,
	"caller" jsonb NOT NULL,
	"callee" jsonb NOT NULL,
	"mos" double precision,
	"packet_loss" double precision,
	"jitter_ms" double precision,
	"missing_audio" boolean NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "call_quality" ADD CONSTRAINT "call_quality_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "call_quality_account_ended_idx" ON "call_quality" USING btree ("account_id","ended_at");