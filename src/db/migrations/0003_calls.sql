CREATE TABLE "call_listeners" (
	"id" text PRIMARY KEY NOT NULL,
	"call_id" text NOT NULL,
	"account_id" text NOT NULL,
	"user_id" text,
	"mode" text NOT NULL,
	"status" text NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "calls" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"mode" text NOT NULL,
	"direction" text NOT NULL,
	"from_number" text,
	"from_label" text,
	"to_number" text,
	"user_id" text,
	"from_user_id" text,
	"to_user_id" text,
	"status" text,
	"started_at" timestamp (3) with time zone NOT NULL,
	"ringing_at" timestamp (3) with time zone,
	"answered_at" timestamp (3) with time zone,
	"connected_at" timestamp (3) with time zone,
	"ended_at" timestamp (3) with time zone,
	"duration_seconds" integer,
	"related_call" text,
	"summary" text,
	"sentiment" jsonb,
	"simulated" boolean DEFAULT false NOT NULL,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "recordings" (
	"id" text PRIMARY KEY NOT NULL,
	"call_id" text NOT NULL,
	"account_id" text NOT NULL,
	"status" text NOT NULL,
	"storage_key" text,
	"duration_seconds" integer,
	"pauses" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"transcript" jsonb,
	"summary" text,
	"sentiment" jsonb,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "voicemails" (
	"id" text PRIMARY KEY NOT NULL,
	"account_id" text NOT NULL,
	"user_id" text,
	"call_id" text,
	"from_number" text,
	"from_name" text,
	"duration_seconds" integer NOT NULL,
	"storage_key" text,
	"is_read" boolean DEFAULT false NOT NULL,
	"transcript" jsonb,
	"summary" text,
	"sentiment" jsonb,
	"created_at" timestamp (3) with time zone NOT NULL,
	"updated_at" timestamp (3) with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "call_listeners" ADD CONSTRAINT "call_listeners_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "calls" ADD CONSTRAINT "calls_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "recordings" ADD CONSTRAINT "recordings_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "voicemails" ADD CONSTRAINT "voicemails_account_id_accounts_id_fk" FOREIGN KEY ("account_id") REFERENCES "public"."accounts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "call_listeners_call_idx" ON "call_listeners" USING btree ("call_id","created_at","id");--> statement-breakpoint
CREATE INDEX "calls_account_page_idx" ON "calls" USING btree ("account_id","created_at","id");--> statement-breakpoint
CREATE INDEX "calls_account_user_idx" ON "calls" USING btree ("account_id","user_id");--> statement-breakpoint
CREATE INDEX "recordings_call_idx" ON "recordings" USING btree ("call_id");--> statement-breakpoint
CREATE INDEX "voicemails_account_page_idx" ON "voicemails" USING btree ("account_id","created_at","id");